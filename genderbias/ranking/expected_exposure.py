"""Expected Exposure (Diaz, Mitra, Ekstrand, Biega & Carterette, CIKM 2020) of the gender groups: :class:`ExpectedExposure`."""

from __future__ import annotations

from genderbias.ranking.group_measure import LOWER, GroupMeasure

__all__ = ["PATIENCE", "ExpectedExposure"]

#: The browsing model's patience γ: the reader goes on from rank i to i + 1 with probability γ, so rank i
#: (from 1) is seen with probability γ^(i−1) (RBP's model, the paper's; γ = 0.5 as in its experiments and
#: its reference code's default).
PATIENCE = 0.5


class ExpectedExposure(GroupMeasure):
    """EE@k, the expected-exposure loss EE-L of the two groups; 0 is fair, lower is fairer.

    Diaz et al. give each document the exposure ε_d = γ^(rank(d)−1) (RBP's browsing model, patience
    :data:`PATIENCE`) and a target ε*_d, the same for every document of one relevance grade; for groups both are
    summed over the members (ε_G = Σ_d A_dG ε_d) and EE-L = Σ_G (ε_G − ε*_G)².

    Here, as for every bias measure of the library, no relevance is judged: the top L = min(k, n) documents are
    owed the same exposure, (Σ_{i≤L} γ^(i−1)) / L, and a group its members' share of it; membership A_dG is the
    soft alignment (f/(f+m), m/(f+m); 0 for a neutral document), as the exposure measures read it. A list whose
    groups' attention matches their share of it scores 0, whatever that share (GFR holds it to a target share).
    Under ``tie-aware``: the expected exposure of a ranker ordering ties at random.
    """

    name = "EE"
    title = "Expected Exposure loss (EE-L)"
    direction = LOWER
    note = "0: fair (attention as each group's share)"
    variants = ()

    def variant(self, settings) -> str:
        return f"rbp{PATIENCE:g}"

    def columns(self, a_f, a_m, n, cutoffs, settings) -> dict:
        import numpy as np

        depth = a_f.shape[1]
        ranks = np.arange(depth)
        inside = ranks[None, :] < np.asarray(n)[:, None]
        exposure = np.where(inside, PATIENCE ** ranks.astype(np.float64), 0.0)
        groups = [np.where(inside, a, 0.0) for a in (a_f, a_m)]
        columns = {}
        for k in cutoffs:
            top = min(k, depth)
            shown = np.maximum(inside[:, :top].sum(axis=1), 1)
            owed = exposure[:, :top].sum(axis=1) / shown  # each document's target exposure
            loss = np.zeros(len(n))
            for a in groups:
                achieved = (exposure[:, :top] * a[:, :top]).sum(axis=1)
                target = owed * a[:, :top].sum(axis=1)
                loss += (achieved - target) ** 2
            columns[f"{self.name}@{k}"] = loss
        return columns

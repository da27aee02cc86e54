"""GFR (Sakai, Kim & Kang, "A Versatile Framework for Evaluating Ranked Lists in terms of Group Fairness
and Relevance", 2022; the group-fairness measure of NTCIR's FairWeb tasks), of the gender groups: one
class, :class:`GFR`."""

from __future__ import annotations

from genderbias.ranking.defaults import DEFAULT_EXPOSURE_TARGET
from genderbias.ranking.group_measure import HIGHER, GroupMeasure

__all__ = ["GFR"]


class GFR(GroupMeasure):
    """GFR@k, group fairness of the gender groups: the mean over the ranks r ≤ L = min(k, n) of
    GF@r = 1 − JSD(p@r ‖ p*), JSD in bits, so each term and GFR lie in [0, 1]; 1 is fair.

    Sakai et al. score a list by a user who stops at rank r with probability Pdecay(r) and gains there
    the relevance of the top r and, for each attribute set, the similarity of the achieved distribution
    over its groups (the top r's members, with soft membership) to a target (gold) distribution: for a
    nominal attribute set, 1 − JSD. Here the attribute set is gender, nominal, two groups; the achieved
    distribution p@r is the female and male shares of the top r's alignments (f/(f+m), m/(f+m), neutral
    documents counting for neither, as AWRF, rKL, rND and rRD read them; a prefix without a gendered
    document is at the target, as AWRF's); the target p* is (t, 1 − t) with t the exposure target (the
    report's ``--exposure-target``, FairWeb's uniform gold distribution by default). As for every bias
    measure of the library no relevance is judged, so the relevance term is left out, and the stopping
    distribution is uniform over the L ranks (Pdecay(r) = 1/L).
    """

    name = "GFR"
    title = "Group Fairness and Relevance (group fairness)"
    direction = HIGHER
    note = "1: fair"
    settings = ("target",)

    def variant(self, settings) -> str:
        target = settings.target
        return "jsd" if target == DEFAULT_EXPOSURE_TARGET else f"jsd,t={target:g}"

    def columns(self, a_f, a_m, n, cutoffs, settings) -> dict:
        import numpy as np

        t = float(settings.target)
        depth = a_f.shape[1]
        inside = np.arange(depth)[None, :] < np.asarray(n)[:, None]
        female = np.cumsum(np.where(inside, a_f, 0.0), axis=1)
        total = female + np.cumsum(np.where(inside, a_m, 0.0), axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            share = np.where(total > 0, female / total, t)
        similarity = np.where(inside, 1.0 - _jsd_bits(share, t), 0.0)
        columns = {}
        for k in cutoffs:
            top = min(k, depth)
            shown = np.maximum(inside[:, :top].sum(axis=1), 1)
            columns[f"{self.name}@{k}"] = similarity[:, :top].sum(axis=1) / shown
        return columns


def _jsd_bits(p, t: float):
    """JSD((p, 1 − p), (t, 1 − t)) in bits (the module stays light: numpy only when computed)."""
    import numpy as np

    middle = (p + t) / 2.0

    def kl(a, b):  # Σ a·log2(a/b) over the two groups, 0·log 0 = 0
        with np.errstate(invalid="ignore", divide="ignore"):
            return sum(np.where(x > 0, x * np.log2(x / y), 0.0) for x, y in ((a, b), (1.0 - a, 1.0 - b)))

    return 0.5 * kl(p, middle) + 0.5 * kl(np.broadcast_to(t, np.shape(p)), middle)

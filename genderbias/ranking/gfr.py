"""GFR (Sakai, Kim & Kang 2022; NTCIR FairWeb's group-fairness measure) of the gender groups: :class:`GFR`."""

from __future__ import annotations

from genderbias.ranking.defaults import DEFAULT_EXPOSURE_TARGET
from genderbias.ranking.group_measure import HIGHER, GroupMeasure

__all__ = ["GFR"]


class GFR(GroupMeasure):
    """GFR@k, group fairness of the gender groups: the mean over the ranks r ≤ L = min(k, n) of
    GF@r = 1 − JSD(p@r ‖ p*), JSD in bits, so GFR lies in [0, 1]; 1 is fair.

    Sakai et al.'s user stops at rank r with probability Pdecay(r) and gains the top r's relevance and, per
    attribute set, the similarity of its group distribution to a target (1 − JSD for a nominal set). Here the set
    is gender: p@r the female and male shares of the top r's alignments (neutral documents counting for neither;
    a prefix without a gendered document at the target), p* = (t, 1 − t) with t the exposure target (FairWeb's
    uniform gold by default). No relevance is judged, so that term is left out, and Pdecay(r) = 1/L.
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

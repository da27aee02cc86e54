"""Exposure-based group fairness of rankings: AWRF and the rank-based rKL, rND, rRD, for every query at once.

Definitions, choices and why: docs/metrics.md, "Exposure-based group fairness". Pure numpy: inputs are the dense
``[queries × depth]`` representative counts ``f``, ``m`` (0 past a list's end) and ``n`` of
:class:`genderbias.ranking.ranked_counts.RankedCounts`, so a run costs a few cumulative sums.

A document with ``f + m > τ`` is gendered, aligned softly; a list without a gendered document is fair (AWRF 1,
the others 0). This is the **adapted** form (default); the **reference** form, as the cited papers' code computes
them, is :mod:`genderbias.ranking.exposure_reference`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genderbias.ranking.defaults import (
    AWRF_WEIGHTS,
    DEFAULT_AWRF_P,
    DEFAULT_AWRF_WEIGHTS,
    DEFAULT_CUT_STEP,
    DEFAULT_EXPOSURE_FORM,
    DEFAULT_EXPOSURE_TARGET,
    DEFAULT_PROTECTED,
    DEFAULT_THRESHOLD,
    EXPOSURE_RULES,
)
from genderbias.ranking.exposure_reference import reference_awrf, reference_rank_fairness, within
from genderbias.ranking.vocabulary import EXPOSURE, REFERENCE_TOKEN

__all__ = [
    "METRICS", "ExposureSettings", "alignment", "awrf", "discounted_sums", "exposure_columns", "group_exposure",
    "position_weights", "rank_fairness",
]  # fmt: skip

#: AWRF's position weights (see the module docstring).
WEIGHTS = AWRF_WEIGHTS
#: The metrics this module computes, in the order of tables and plots (the vocabulary's).
METRICS = EXPOSURE


@dataclass(frozen=True)
class ExposureSettings:
    """The choices of the exposure metrics; every default is the module docstring's."""

    weights: str = DEFAULT_AWRF_WEIGHTS  #: AWRF's position weights, one of :data:`WEIGHTS`
    p: float = DEFAULT_AWRF_P  #: ``geometric`` weights: the first rank's share of attention, in (0, 1)
    target: float = (
        DEFAULT_EXPOSURE_TARGET  #: the target's female share t of exposure (AWRF) and of each prefix (rKL/rND/rRD)
    )
    protected: str = DEFAULT_PROTECTED  #: the protected group of rKL/rND/rRD, one of :data:`genderbias.ranking.defaults.PROTECTED_GROUPS`
    step: int = DEFAULT_CUT_STEP  #: rKL/rND/rRD's cut points: every ``step`` ranks (and the cutoff)
    threshold: float = DEFAULT_THRESHOLD  #: NFaiRR's τ: a document with at most τ representative words is neutral
    form: str = DEFAULT_EXPOSURE_FORM  #: ``adapted`` or ``reference`` (module docstring)

    def validate(self) -> None:
        """``ValueError`` naming the bad setting, by its rule (:data:`genderbias.ranking.defaults.EXPOSURE_RULES`)."""
        for attribute, rule in EXPOSURE_RULES.items():
            rule.check(getattr(self, attribute))

    @property
    def protected_share(self) -> float:
        """q: the target's share of the protected group."""
        return self.target if self.protected == "female" else 1.0 - self.target

    @property
    def reference(self) -> bool:
        """The reference form (the cited papers' code) rather than the platform's adapted one."""
        return self.form == "reference"

    def _target_label(self) -> str:
        """``,t=…`` when the target is not ½ and is used (the reference form has no target)."""
        return "" if self.target == DEFAULT_EXPOSURE_TARGET or self.reference else f",t={self.target:g}"

    def awrf_variant(self) -> str:
        """AWRF's variant label: its weights (``geometric:0.5``), the target when not ½, ``,reference``."""
        label = f"geometric:{self.p:g}" if self.weights == "geometric" else self.weights
        return label + self._target_label() + (f",{REFERENCE_TOKEN}" if self.reference else "")

    def rank_variant(self) -> str:
        """rKL/rND/rRD's variant label: the protected group, the target when not ½, ``,reference``, the step when not 10."""
        label = self.protected + self._target_label() + (f",{REFERENCE_TOKEN}" if self.reference else "")
        return label + ("" if self.step == DEFAULT_CUT_STEP else f",step={self.step}")


def position_weights(depth: int, weights: str = "dcg", p: float = 0.5) -> np.ndarray:
    """w_r for r = 1..depth under ``weights`` (:data:`WEIGHTS`)."""
    ranks = np.arange(1, depth + 1, dtype=np.float64)
    if weights == "dcg":
        return 1.0 / np.log2(ranks + 1.0)
    if weights == "trec":
        return 1.0 / np.log2(np.maximum(ranks, 2.0))
    if weights == "geometric":
        return p * (1.0 - p) ** (ranks - 1.0)
    raise ValueError(f"unknown AWRF weights {weights!r}; choose one of {', '.join(WEIGHTS)}")


def alignment(f: np.ndarray, m: np.ndarray, threshold: float = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(a_f, a_m, gendered)``: each document's soft alignment to female and male (0 for a neutral
    document, f + m ≤ τ) and whether it is gendered."""
    f = np.asarray(f, dtype=np.float64)
    m = np.asarray(m, dtype=np.float64)
    total = f + m
    gendered = total > threshold
    a_f = np.divide(f, total, out=np.zeros_like(total), where=gendered)
    a_m = np.divide(m, total, out=np.zeros_like(total), where=gendered)
    return a_f, a_m, gendered


def group_exposure(
    f: np.ndarray, m: np.ndarray, n: np.ndarray, cutoff: int, settings: ExposureSettings = ExposureSettings()
) -> tuple[np.ndarray, np.ndarray]:
    """``(ε_f, ε_m)`` per query: attention-weighted alignment of the top min(cutoff, n) documents."""
    a_f, a_m, _ = alignment(f, m, settings.threshold)
    return _group_exposure(a_f, a_m, n, cutoff, settings)


def _group_exposure(
    a_f: np.ndarray, a_m: np.ndarray, n: np.ndarray, cutoff: int, settings: ExposureSettings
) -> tuple[np.ndarray, np.ndarray]:
    depth = min(cutoff, a_f.shape[1])
    keep = within(n, a_f.shape[1])[:, :depth]
    w = position_weights(depth, settings.weights, settings.p)
    return (a_f[:, :depth] * keep) @ w, (a_m[:, :depth] * keep) @ w


def _kl2(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """KL((p, 1 − p) ‖ (q, 1 − q)) in nats, 0·ln 0 = 0 (q strictly inside (0, 1) or equal to p where p is 0 or 1)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        first = np.where(p > 0, p * np.log(p / q), 0.0)
        second = np.where(p < 1, (1 - p) * np.log((1 - p) / (1 - q)), 0.0)
    return first + second


def jensen_shannon(p: np.ndarray, t: float | np.ndarray) -> np.ndarray:
    """JSD((p, 1 − p), (t, 1 − t)) in nats."""
    p = np.asarray(p, dtype=np.float64)
    middle = (p + t) / 2.0
    return 0.5 * _kl2(p, middle) + 0.5 * _kl2(np.broadcast_to(t, p.shape), middle)


def awrf(
    f: np.ndarray, m: np.ndarray, n: np.ndarray, cutoff: int, settings: ExposureSettings = ExposureSettings()
) -> np.ndarray:
    """AWRF@cutoff per query: 1 − JSD(exposure distribution, target); 1 without a gendered document."""
    a_f, a_m, _ = alignment(f, m, settings.threshold)
    return _awrf(a_f, a_m, n, cutoff, settings)


def _awrf(a_f: np.ndarray, a_m: np.ndarray, n: np.ndarray, cutoff: int, settings: ExposureSettings) -> np.ndarray:
    if settings.reference:
        return reference_awrf(a_f, a_m, n, cutoff, position_weights(a_f.shape[1], settings.weights, settings.p))
    e_f, e_m = _group_exposure(a_f, a_m, n, cutoff, settings)
    total = e_f + e_m
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(total > 0, e_f / total, settings.target)  # no gendered document: the target itself
    return 1.0 - jensen_shannon(share, settings.target)


def cut_points(n: np.ndarray, cutoff: int, step: int, depth: int) -> np.ndarray:
    """``[queries × depth]`` mask of the cut points i ∈ {step, 2·step, …} ∪ {L}, i ≤ L = min(cutoff, n)."""
    ranks = np.arange(1, depth + 1)
    last = np.minimum(cutoff, np.asarray(n))[:, None]
    return (ranks[None, :] <= last) & ((ranks[None, :] % step == 0) | (ranks[None, :] == last))


def rank_discount(depth: int, kind: str = "yang") -> np.ndarray:
    """δ_i for i = 1..depth: ``yang`` 1/log2(i) (1 at i = 1), the paper's; ``dcg`` 1/log2(i + 1) (NDKL's)."""
    ranks = np.arange(1, depth + 1, dtype=np.float64)
    return 1.0 / np.log2(np.maximum(ranks, 2.0) if kind == "yang" else ranks + 1.0)


def _terms(share: np.ndarray, q: np.ndarray, measure: str) -> tuple[np.ndarray, np.ndarray]:
    """Each prefix's term and its largest possible value for ``measure`` (rKL, rND, rRD)."""
    if measure == "rND":
        return np.abs(share - q), np.maximum(q, 1.0 - q)
    if measure == "rKL":
        return _kl2(share, q), np.maximum(-np.log(q), -np.log(1.0 - q))
    if measure == "rRD":
        ratio = q / (1.0 - q)
        with np.errstate(invalid="ignore", divide="ignore"):
            current = np.where(share < 1.0, share / (1.0 - share), np.inf)
        return np.maximum(0.0, ratio - current), ratio
    raise ValueError(f"unknown rank fairness measure {measure!r}; choose rKL, rND or rRD")


def _prefix_shares(protected: np.ndarray, gendered: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(G, P)`` per query and rank i at full depth: the gendered documents in the top i, their protected share."""
    protected = np.asarray(protected, dtype=np.float64)
    inside = within(n, protected.shape[1])
    counted = np.cumsum(np.asarray(gendered, dtype=bool) & inside, axis=1)
    aligned = np.cumsum(protected * inside, axis=1)
    share = np.divide(aligned, counted, out=np.zeros_like(aligned), where=counted > 0)
    return counted, np.clip(share, 0.0, 1.0)


def _at_cuts(
    term: np.ndarray, largest, counted: np.ndarray, n: np.ndarray, cutoff: int, step: int, discount: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(Σ δ_i term_i, Σ δ_i, Σ δ_i max term)`` over the cut points of ``cutoff`` with G_i > 0."""
    depth = min(cutoff, term.shape[1])
    cuts = cut_points(n, cutoff, step, depth) & (counted[:, :depth] > 0)
    delta = rank_discount(depth, discount)[None, :] * cuts
    return (delta * term[:, :depth]).sum(axis=1), delta.sum(axis=1), (delta * largest).sum(axis=1)


def _reference(q: float | np.ndarray):
    """q as a number or a ``[queries × 1]`` column."""
    return np.asarray(q, dtype=np.float64).reshape(-1, 1) if np.ndim(q) else np.float64(q)


def discounted_sums(
    protected: np.ndarray,
    gendered: np.ndarray,
    n: np.ndarray,
    cutoff: int,
    measure: str,
    *,
    q: float | np.ndarray = 0.5,
    step: int = 10,
    discount: str = "yang",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(Σ δ_i term_i, Σ δ_i, Σ δ_i max term)`` per query over the defined cut points (G_i > 0).

    ``protected``: ``[queries × depth]`` alignment to the protected group; ``gendered``: the document is in a
    group; ``q``: the reference protected share, one or one per query. rKL/rND/rRD are the first sum over the
    third; the first over the second with ``step=1, discount="dcg"`` and ``q`` the list's own share is Geyik et
    al.'s NDKL (tests compare it with FairRankTune's).
    """
    counted, share = _prefix_shares(protected, gendered, n)
    term, largest = _terms(share, _reference(q), measure)
    return _at_cuts(term, largest, counted, n, cutoff, step, discount)


def rank_fairness(
    f: np.ndarray,
    m: np.ndarray,
    n: np.ndarray,
    cutoff: int,
    measure: str,
    settings: ExposureSettings = ExposureSettings(),
) -> np.ndarray:
    """rKL, rND or rRD at ``cutoff`` per query (0 fair, 1 most unfair; 0 without a gendered document)."""
    a_f, a_m, gendered = alignment(f, m, settings.threshold)
    return _rank_fairness(a_f if settings.protected == "female" else a_m, gendered, n, cutoff, measure, settings)


def _rank_fairness(
    protected: np.ndarray, gendered: np.ndarray, n: np.ndarray, cutoff: int, measure: str, settings: ExposureSettings
) -> np.ndarray:
    if settings.reference:
        return reference_rank_fairness(protected, gendered, n, cutoff, measure, settings.step)
    total, _, largest = discounted_sums(
        protected, gendered, n, cutoff, measure, q=settings.protected_share, step=settings.step
    )
    return _normalise(total, largest)


def _normalise(total: np.ndarray, largest: np.ndarray) -> np.ndarray:
    """Σ δ term ÷ Z; 0 (fair) where no cut point has a gendered document."""
    return np.divide(total, largest, out=np.zeros_like(total), where=largest > 0)


def exposure_columns(
    f: np.ndarray, m: np.ndarray, n: np.ndarray, cutoffs: list[int], settings: ExposureSettings = ExposureSettings()
) -> dict[str, np.ndarray]:
    """``{"AWRF@k", "rKL@k", "rND@k", "rRD@k": per-query values}`` for every cutoff."""
    settings.validate()
    # Alignments, prefix shares and each measure's terms once, at full depth; a cutoff takes its
    # first columns (the same numbers as awrf() and rank_fairness() at each cutoff).
    a_f, a_m, gendered = alignment(f, m, settings.threshold)
    protected = a_f if settings.protected == "female" else a_m
    if settings.reference:
        columns = {}
        weights = position_weights(a_f.shape[1], settings.weights, settings.p)
        for k in cutoffs:
            columns[f"AWRF@{k}"] = reference_awrf(a_f, a_m, n, k, weights)
            for measure in METRICS[1:]:
                columns[f"{measure}@{k}"] = reference_rank_fairness(protected, gendered, n, k, measure, settings.step)
        return columns
    counted, share = _prefix_shares(protected, gendered, n)
    terms = {measure: _terms(share, _reference(settings.protected_share), measure) for measure in METRICS[1:]}
    columns = {}
    for k in cutoffs:
        columns[f"AWRF@{k}"] = _awrf(a_f, a_m, n, k, settings)
        for measure, (term, largest) in terms.items():
            total, _, most = _at_cuts(term, largest, counted, n, k, settings.step, "yang")
            columns[f"{measure}@{k}"] = _normalise(total, most)
    return columns

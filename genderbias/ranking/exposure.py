"""Exposure-based group fairness of rankings: AWRF and the rank-based rKL, rND, rRD, for every query at once.

Pure (numpy only; no Django): inputs are dense ``[queries × depth]`` matrices of the
representative word counts ``f``, ``m`` of each query's ranked documents (0 past the end of
its list) and ``n``, the documents each query has — :class:`genderbias.ranking.ranked_counts.RankedCounts`
holds them — so the cost is a few cumulative sums per run, no Python loop per query.

Groups (the representation NFaiRR uses)
---------------------------------------
A document with ``f + m > τ`` representative words is **gendered** and belongs to the groups
softly: alignment a_f(d) = f/(f+m) to *female*, a_m(d) = m/(f+m) to *male* (a one-sided
document belongs wholly to its group, a balanced one half to each). A document with
``f + m ≤ τ`` is **neutral**: it is excluded from the group distribution (alignment 0 to
both), as TREC Fair Ranking 2021's AWRF treated documents without a known group (their
alignment is empty, the distribution is normalised over the known groups). Its rank still
counts: it takes a position (and its attention) from the gendered documents below it.

AWRF@k — attention-weighted rank fairness (Sapiezynski et al. 2019; TREC Fair Ranking 2021–22)
----------------------------------------------------------------------------------------------
With position weights w_r, the group exposure of the top min(k, n) documents is
ε_g = Σ_{r ≤ min(k,n)} w_r · a_g(d_r) for g ∈ {f, m}; the exposure distribution
P = (ε_f, ε_m)/(ε_f + ε_m) is compared with the target T = (t, 1 − t) (default t = ½) by the
Jensen–Shannon divergence in nats, as TREC Fair's evaluation code (``scipy``'s
``jensenshannon`` squared): JSD(P, T) = ½ KL(P‖M) + ½ KL(T‖M), M = (P + T)/2, and
**AWRF = 1 − JSD** ∈ [1 − ln 2, 1] ≈ [0.307, 1]; 1 is fair. No gendered document in the top k:
no group is over- or under-exposed, AWRF = 1 — the platform's convention for a list without
gendered words (NFaiRR's ω = 1, TExFAIR = 1), which keeps every query in the mean and the
count. Weights (:data:`WEIGHTS`):

- ``dcg`` (default): w_r = 1/log2(r + 1), the discount of NFaiRR and TExFAIR, so the metrics
  of one report differ in how they see groups, not in how they weigh ranks;
- ``trec``: w_r = 1/log2(max(r, 2)), TREC Fair Ranking 2021–22's ``discount``;
- ``geometric``: w_r = p (1 − p)^(r−1), Sapiezynski et al.'s attention model (FairRankTune's
  ``AWRF``, scaled there by 100), p the share of attention the first rank receives.

rKL@k, rND@k, rRD@k (Yang & Stoyanovich, SSDBM 2017)
----------------------------------------------------
Defined for a binary protected / unprotected split: here the **protected** group is one of the
two genders (``female`` by default, the group the literature finds under-exposed), and its
share of a prefix counts gendered documents only, softly: with G_i the gendered documents in
the top i and S_i = Σ_{r ≤ i} a_protected(d_r), P_i = S_i / G_i. Its reference is the target's
protected share q (t for female, 1 − t for male; ½ by default) — not, as in the paper, the
protected share of the whole ranked population, which for a ranking of documents drawn from a
collection would call a list of only male documents fair. Cut points are i ∈ {s, 2s, …} with
i ≤ L = min(k, n), and L itself (s = 10, the paper's, by default; so rND@5 has the one cut
point 5). With discount δ_i = 1/log2(i) (1 at i = 1):

- rND term: |P_i − q|, at most max(q, 1 − q);
- rKL term: KL((P_i, 1 − P_i) ‖ (q, 1 − q)) in nats, 0·ln 0 = 0, at most max(−ln q, −ln(1 − q));
- rRD term (the FATML poster's and the reference code's form, which counts only
  under-representation): max(0, R − R_i) with R = q/(1 − q) and R_i = P_i/(1 − P_i) (∞ for an
  all-protected prefix, whose term is then 0), at most R.

value = Σ_i δ_i·term_i / Z, Z = Σ_i δ_i·max term: the most unfair list of the same cut points,
one whose gendered documents all lean wholly to the group farther from the target — the exact
maximum (the reference code estimates it by sampling unfair rankings). Cut points with no
gendered document yet (G_i = 0) are left out of both sums; none left (no gendered document in
the top k): 0, fair, as AWRF's 1. 0 is fair, 1 the most unfair. The paper's discount is 1/log2 i (its code uses 1/log2(i + 1)).

Two forms (``ExposureSettings.form``; their wording: :data:`genderbias.ranking.vocabulary.FORM_DEFINITIONS`)
--------------------------------------------------------------------------------------------
Everything above is the **adapted** form (default): the platform's adaptation to documents a ranker
chose from a collection, where the reference must be a target, not the list's own composition. The
**reference** form computes the metrics as the cited papers' reference code does
(:mod:`genderbias.ranking.exposure_reference`). A report records its form (``Report.exposure_form``)
and every reference-form result carries ``reference`` in its variant (``female,reference``, ``dcg,reference``).
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
    EXPOSURE_FORMS,
    EXPOSURE_RULES,
    MAX_CUT_STEP,
    PROTECTED_GROUPS,
)
from genderbias.ranking.exposure_reference import reference_awrf, reference_rank_fairness, within
from genderbias.ranking.vocabulary import EXPOSURE, REFERENCE_TOKEN

#: AWRF's position weights (see the module docstring).
WEIGHTS = AWRF_WEIGHTS
#: The groups that may be the protected one of rKL/rND/rRD.
PROTECTED = PROTECTED_GROUPS
#: The largest cut-point step (a step beyond the list's length leaves the one cut point min(k, n)).
MAX_STEP = MAX_CUT_STEP
#: The metrics this module computes, in the order of tables and plots (the vocabulary's).
METRICS = EXPOSURE
#: The forms: the platform's ``adapted`` one (default) and the cited papers' ``reference`` code's.
FORMS = EXPOSURE_FORMS


@dataclass(frozen=True)
class ExposureSettings:
    """The choices of the exposure metrics; every default is the module docstring's."""

    weights: str = DEFAULT_AWRF_WEIGHTS  #: AWRF's position weights, one of :data:`WEIGHTS`
    p: float = DEFAULT_AWRF_P  #: ``geometric`` weights: the first rank's share of attention, in (0, 1)
    target: float = (
        DEFAULT_EXPOSURE_TARGET  #: the target's female share t of exposure (AWRF) and of each prefix (rKL/rND/rRD)
    )
    protected: str = DEFAULT_PROTECTED  #: the protected group of rKL/rND/rRD, one of :data:`PROTECTED`
    step: int = DEFAULT_CUT_STEP  #: rKL/rND/rRD's cut points: every ``step`` ranks (and the cutoff)
    threshold: float = DEFAULT_THRESHOLD  #: NFaiRR's τ: a document with at most τ representative words is neutral
    form: str = DEFAULT_EXPOSURE_FORM  #: ``adapted`` or ``reference`` (:data:`FORMS`; see the module docstring)

    def validate(self) -> None:
        """``ValueError`` (:class:`genderbias.ranking.defaults.OptionError`) naming the bad setting: each
        setting's one check is its rule's (:data:`genderbias.ranking.defaults.EXPOSURE_RULES`)."""
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
        """AWRF's variant label: its weights (``dcg``, ``trec``, ``geometric:0.5``), the target when not ½,
        ``,reference`` in the reference form."""
        label = f"geometric:{self.p:g}" if self.weights == "geometric" else self.weights
        return label + self._target_label() + (f",{REFERENCE_TOKEN}" if self.reference else "")

    def rank_variant(self) -> str:
        """rKL/rND/rRD's variant label: the protected group, the target when not ½, ``,reference`` in the
        reference form, the step when not 10."""
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
    """``(G, P)``: per query and rank i, the gendered documents among the top i and their protected share
    (0 where G_i = 0), at the matrices' full depth (a cutoff's are its first columns)."""
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

    ``protected``: ``[queries × depth]`` alignment to the protected group (soft or 0/1);
    ``gendered``: the document is in a group (neutral documents are not). ``q``: the reference
    protected share, one number or one per query. rKL/rND/rRD are the first sum over the third;
    the first over the second with ``step=1, discount="dcg"`` and ``q`` the list's own share is
    Geyik et al.'s NDKL (tests compare it with FairRankTune's).
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

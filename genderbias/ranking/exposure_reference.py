"""The exposure metrics in their **reference** form, as the cited papers' code computes them, so published numbers
can be compared (docs/metrics.md, "Exposure-based group fairness"; :mod:`genderbias.ranking.exposure` calls this
when ``ExposureSettings.form`` is ``reference``). Pure (numpy, scipy's binomial).

- AWRF: FairRankTune's with ``MinMaxRatio``: min_g V_g / max_g V_g, V_g = ε_g / N_g the attention per member
  (N_g = Σ a_g over the top min(k, n)); one group present: 1; none: NaN.
- rKL, rND, rRD: Yang & Stoyanovich's ``FairRank`` code on the top L = min(k, n), q the list's own protected
  share, cut points step, 2·step, … ≤ L, discount 1/log2(i + 1), normalised by the larger expected value of the
  code's generated rankings (it samples 10 each); NaN where the code refuses (one group, no cut point).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["reference_awrf", "reference_rank_fairness", "reference_rank_sums", "within"]

#: The reference code's floor (FairRank ``measures.calculaterKL``): a prefix share of 0 or 1 becomes 0.001.
KL_FLOOR = 0.001


def within(n: np.ndarray, depth: int) -> np.ndarray:
    """``[queries × depth]``: the rank is within the query's list (``n`` its documents)."""
    return np.arange(depth)[None, :] < np.asarray(n)[:, None]


def reference_awrf(a_f: np.ndarray, a_m: np.ndarray, n: np.ndarray, cutoff: int, weights: np.ndarray) -> np.ndarray:
    """AWRF@cutoff per query in the reference form (module docstring); ``weights``: the position weights w_r of at
    least min(cutoff, depth) ranks (:func:`genderbias.ranking.exposure.position_weights`)."""
    depth = min(cutoff, a_f.shape[1])
    keep = within(n, a_f.shape[1])[:, :depth]
    f, m = a_f[:, :depth] * keep, a_m[:, :depth] * keep
    w = weights[:depth]
    size_f, size_m = f.sum(axis=1), m.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_f, per_m = (f @ w) / size_f, (m @ w) / size_m
        ratio = np.minimum(per_f, per_m) / np.maximum(per_f, per_m)
    both, either = (size_f > 0) & (size_m > 0), (size_f > 0) | (size_m > 0)
    return np.where(both, ratio, np.where(either, 1.0, np.nan))


def _reference_terms(aligned: np.ndarray, counted: np.ndarray, q: np.ndarray, measure: str) -> np.ndarray:
    """Each prefix's term as the reference code (FairRank ``measures.py``) computes it, S_i = ``aligned``
    protected of G_i = ``counted`` gendered documents, q the list's protected share (a column):

    - rND ``calculaterND``: |S_i/G_i − q|;
    - rKL ``calculaterKL``: KL((p, 1 − p) ‖ (q, 1 − q)) in bits, p = S_i/G_i, a p of 0 or 1 replaced by 0.001;
    - rRD ``calculaterRD``: |min(R, R_i) − R|, R = q/(1 − q), R_i = S_i/(G_i − S_i), and R_i = 0 where
      G_i − S_i = 0 (an all-protected prefix: the largest term R)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.clip(aligned / counted, 0.0, 1.0)
        if measure == "rND":
            return np.abs(share - q)
        if measure == "rKL":
            p = np.where((share <= 1e-12) | (share >= 1 - 1e-12), KL_FLOOR, share)
            return p * np.log2(p / q) + (1 - p) * np.log2((1 - p) / (1 - q))
        if measure == "rRD":  # S_i/(G_i − S_i) as share/(1 − share): exactly R where the share is q
            ratio = q / (1 - q)
            current = np.where(counted - aligned <= 1e-12, 0.0, share / (1 - share))
            return np.abs(np.minimum(ratio, current) - ratio)
    raise ValueError(f"unknown rank fairness measure {measure!r}; choose rKL, rND or rRD")


def _binomial_window(top: int, probability: float) -> tuple[np.ndarray, np.ndarray]:
    """``(start, pmf)``: for every g = 0 … ``top``, P(X = start[g] + k), X ~ Binomial(g, f), k = 0 … W − 1, a
    window around the mode W = 2·⌈7 sd⌉ + 5 wide (at most top + 1): all but ~10⁻¹¹ of the mass."""
    from scipy import stats

    half = math.ceil(7 * math.sqrt(top * probability * (1 - probability))) + 2
    width = min(top + 1, 2 * half + 1)
    sizes = np.arange(top + 1)
    start = np.clip(np.floor(sizes * probability).astype(np.int64) - half, 0, None)
    start = np.minimum(start, np.maximum(sizes - width + 1, 0))
    picks = start[:, None] + np.arange(width)[None, :]
    return start, stats.binom.pmf(picks, sizes[:, None], probability)


def _generated(
    counted: np.ndarray,
    delta: np.ndarray,
    size: np.ndarray,
    mass: np.ndarray,
    q: np.ndarray,
    measure: str,
    probability: float,
) -> np.ndarray:
    """Σ δ_i E[term_i] over the rankings the reference code generates from the list's documents at fairness
    ``probability`` f (``dataGenerator.generateUnfairRanking``: while both groups last, the next document is
    protected with probability f, then the rest of the other group). Of N = ``size`` gendered documents,
    P = ``mass`` protected, the first G_i hold S_i = min(P, max(X, G_i − (N − P))), X ~ Binomial(G_i, f); neutral
    documents keep their ranks. f = 0 is the protected-last list itself."""
    total = np.zeros(len(counted))
    columns = np.flatnonzero(delta.any(axis=0))
    if not len(columns):
        return total
    if probability > 0:
        start, pmf = _binomial_window(int(counted[:, columns].max()), probability)
        offsets = np.arange(pmf.shape[1], dtype=np.float64)[None, :]
    for column in columns:
        g = counted[:, column]
        if probability > 0:
            picks, weights = start[g][:, None] + offsets, pmf[g]
        else:
            picks, weights = np.zeros((1, 1)), np.ones((1, 1))
        gendered = g.astype(np.float64)[:, None]
        held = np.minimum(mass, np.maximum(picks, gendered - (size - mass)))
        terms = np.nan_to_num(_reference_terms(held, gendered, q, measure))
        total += delta[:, column] * (weights * terms).sum(axis=1)
    return total


#: The fairness probabilities whose generated rankings the reference code's normaliser averages
#: (FairRank ``measures.calculateNormalizer``: 0 and 0.98; 0 and 0.5 for rRD).
GENERATOR_PROBABILITIES = {"rKL": (0.0, 0.98), "rND": (0.0, 0.98), "rRD": (0.0, 0.5)}


def reference_rank_sums(
    protected: np.ndarray, gendered: np.ndarray, n: np.ndarray, cutoff: int, measure: str, step: int = 10
) -> tuple[np.ndarray, dict[float, np.ndarray]]:
    """``(Σ δ_i term_i, {f: Σ δ_i E[term_i] of the rankings generated at fairness probability f})`` per query:
    the code's ``calculateNDFairness`` with normaliser 1, and the expectations its normaliser samples."""
    depth = min(cutoff, protected.shape[1])
    queries = len(protected)
    if depth == 0:
        return np.zeros(queries), {f: np.zeros(queries) for f in GENERATOR_PROBABILITIES[measure]}
    inside = within(n, protected.shape[1])[:, :depth]
    is_gendered = np.asarray(gendered, dtype=bool)[:, :depth] & inside
    aligned = np.cumsum(np.where(is_gendered, np.asarray(protected, dtype=np.float64)[:, :depth], 0.0), axis=1)
    counted = np.cumsum(is_gendered, axis=1)
    last = np.minimum(cutoff, np.asarray(n)).astype(np.int64)
    end = np.clip(last, 1, depth) - 1
    rows = np.arange(queries)
    size, mass = counted[rows, end][:, None].astype(np.float64), aligned[rows, end][:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        q = mass / size
    defined = (last[:, None] >= 1) & (q > 1e-12) & (q < 1 - 1e-12)
    ranks = np.arange(1, depth + 1)
    cuts = (ranks[None, :] % step == 0) & (ranks[None, :] <= last[:, None]) & (counted > 0) & defined
    delta = np.where(cuts, 1.0 / np.log2(ranks[None, :] + 1.0), 0.0)
    q = np.where(defined, q, 0.5)
    total = (delta * np.nan_to_num(_reference_terms(aligned, counted, q, measure))).sum(axis=1)
    generated = {f: _generated(counted, delta, size, mass, q, measure, f) for f in GENERATOR_PROBABILITIES[measure]}
    return total, generated


def reference_rank_fairness(
    protected: np.ndarray, gendered: np.ndarray, n: np.ndarray, cutoff: int, measure: str, step: int = 10
) -> np.ndarray:
    """rKL, rND or rRD at ``cutoff`` per query in the reference form (module docstring): Σ δ_i term_i ÷ Z, Z the
    larger expectation of :func:`reference_rank_sums`; NaN where Z = 0. ``protected``: alignment to the protected
    group (soft or 0/1); ``gendered``: the document is in a group."""
    total, generated = reference_rank_sums(protected, gendered, n, cutoff, measure, step)
    largest = np.max(list(generated.values()), axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(largest > 1e-12, total / largest, np.nan)

"""Bootstrap interval constructions: the one place that turns bootstrap draws into an interval
for the label-based figures (the label-corrected value and paired difference,
:mod:`genderbias.crowd.label_uncertainty`; the machine's de-noised accuracy,
:mod:`genderbias.crowd.reliability`), and the one place that says which construction
they use (:data:`LABEL_INTERVAL`).

Pure (numpy and the standard library). With θ̂ the point estimate, θ*_b the B bootstrap draws
(NaN draws left out), q(p) their p-quantile, α = (1 − level)/2 and z_p = Φ⁻¹(p):

- ``percentile``: [q(α), q(1 − α)];
- ``basic`` (reverse percentile): [2θ̂ − q(1 − α), 2θ̂ − q(α)];
- ``normal``: θ̂ ± z_{1−α}·sd(θ*);
- ``bc`` (bias-corrected percentile, Efron 1981/1987): z₀ = Φ⁻¹(share of draws below θ̂, ties
  counted half); [q(Φ(2z₀ + z_α)), q(Φ(2z₀ + z_{1−α}))]. When the draws sit above the estimate
  (z₀ < 0) the bootstrap says the estimator overshoots, and the interval moves down by about
  twice that shift relative to the percentile interval, which leaves the overshoot in;
- ``bca`` (bias-corrected and accelerated, Efron 1987; Efron & Tibshirani 1993, §14.3): as
  ``bc`` with q(Φ(z₀ + (z₀ + z_p)/(1 − a(z₀ + z_p)))) and the acceleration a from a
  delete-a-group jackknife (:func:`jackknife_weights`, :func:`acceleration`): the same
  estimator refitted with one block of the queries left out, G times;
- ``crossed``, ``crossed_net`` (and their ``_normal`` forms): the percentile (normal) interval of
  draws widened to carry the **workers' variance component** (:func:`extra_variance`,
  :func:`widen`). The bootstrap resamples queries, each with its answers, and refits the crowd
  model, but it never redraws the workers: which workers a study happened to get, and the error
  of their fitted confusion matrices, is in every query they answered at once, a crossed design
  (queries × workers; Owen 2007). A delete-a-group jackknife over the workers (G groups, each
  refit without the group's answers, gold and repeated answers with their worker) estimates that
  part, plus the answers' own noise, which the bootstrap already holds; a jackknife over single
  answers estimates the latter. ``crossed`` adds the workers' jackknife variance (the answers'
  share counted twice: wide), ``crossed_net`` the workers' minus the answers' (each part once, to
  first order; never below 0, so never narrower than the bootstrap's interval).

Which one the label-based figures use (:data:`LABEL_INTERVAL`) is decided by simulated coverage,
all of them computed paired from the same draws of each study (``manage.py crowd_coverage``;
docs/metrics.md, "Coverage, as simulated" and "Interval constructions compared"). BC, BCa and the
basic interval move the interval against the draws' shift over the estimate, right when that
shift mirrors the estimator's own bias (the heavy-noise crowd) and wrong when it does not (the
moderate crowd: the estimate is unbiased, the refitted draws sit about 0.25 s.d. above it all the
same); the normal interval ignores the shift. None of those five widens an interval whose draws
spread less than the estimate does from study to study, which kept the moderate crowd's value and
difference below 0.93 at 1,000 queries (176 studies: percentile 0.920 and 0.903). The crossed
constructions do. With the crowd model before issue 58, ``crossed_net`` covered value, difference and
de-noised accuracy 0.966, 0.956, 0.929 over 294 studies of 1,000 queries at 1.18, 1.18, 1.09 times the
percentile interval's mean width (``crossed`` 0.980, 0.986, 0.966 at 1.56, 1.54, 1.39: the answers' noise
counted twice). With issue 58's model (rows a sparse crowd cannot identify shrunk to one coin per worker),
``crossed_net`` fell short (paired, 40 studies each: moderate crowd 0.950, 0.875, 0.875; gold-selected 0.900,
0.925, 0.875) where ``crossed`` did not (0.975, 0.975, 0.950 and 0.950, 0.950, 0.975, at 1.36–1.44 times the
width), so ``crossed`` is the product's since 2026-11-26 (docs/quality.md "Too sure, and by how much").
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from statistics import NormalDist

import numpy as np

from genderbias.ranking.defaults import LEVEL

#: The constructions :func:`bootstrap_interval` knows, in the order the coverage table prints them.
CONSTRUCTIONS = (
    "percentile", "basic", "normal", "bc", "bca", "crossed", "crossed_normal", "crossed_net", "crossed_net_normal"
)  # fmt: skip
#: The constructions that add the workers' variance component (:func:`extra_variance`,
#: :func:`widen`): the construction each applies to the widened draws, and whether the answers'
#: own share, counted by both the bootstrap and the jackknife over workers, is taken out once.
CROSSED = {
    "crossed": ("percentile", False),
    "crossed_normal": ("normal", False),
    "crossed_net": ("percentile", True),
    "crossed_net_normal": ("normal", True),
}
#: The construction of every label-based interval (report, command, API, methods text, calibration
#: report's de-noised accuracy): chosen by the simulated coverage of docs/metrics.md and docs/quality.md,
#: not tuned (the module docstring says why: with issue 58's crowd model the one at ≥ 0.93 for every figure).
LABEL_INTERVAL = "crossed"
#: Blocks of the delete-a-group jackknives: ``bca``'s acceleration over the queries, the crossed
#: constructions' over the workers and over the answers (G refits each).
JACKKNIFE_BLOCKS = 20

_NORMAL = NormalDist()

#: Each construction in words, for the methods text, the report's policy and the page.
DESCRIPTIONS = {
    "percentile": "percentile bootstrap interval",
    "basic": "basic (reverse-percentile) bootstrap interval",
    "normal": "normal bootstrap interval (the estimate plus or minus 1.96 bootstrap standard deviations)",
    "bc": "bias-corrected (BC) percentile bootstrap interval",
    "bca": "bias-corrected and accelerated (BCa) bootstrap interval",
    "crossed": "percentile bootstrap interval widened by the workers' variance (queries resampled, plus a "
    "delete-a-group jackknife over the workers)",
    "crossed_normal": "normal interval with the queries' bootstrap variance plus the workers' jackknife variance",
    "crossed_net": "percentile bootstrap interval widened by the workers' variance net of the answers' own "
    "(queries resampled, plus delete-a-group jackknives over the workers and over the answers)",
    "crossed_net_normal": "normal interval with the queries' bootstrap variance plus the workers' jackknife "
    "variance net of the answers'",
}


def describe(construction: str = LABEL_INTERVAL) -> str:
    """``construction`` in words (:data:`DESCRIPTIONS`)."""
    return DESCRIPTIONS[construction]


def needs_jackknife(construction: str) -> bool:
    """Whether ``construction`` needs the jackknife (:func:`acceleration`): only ``bca``."""
    return construction == "bca"


def needs_workers(construction: str) -> bool:
    """Whether ``construction`` needs the workers' variance (:func:`jackknife_variance` of a jackknife
    over the workers)."""
    return construction in CROSSED


def unit_groups(sizes: np.ndarray, blocks: int = JACKKNIFE_BLOCKS) -> np.ndarray:
    """The group (0 … G − 1) of each unit of a delete-a-group jackknife over units of unequal
    ``sizes`` (a worker's answers), G = min(blocks, units): the units in decreasing size (ties
    in their order) dealt round-robin, so the groups are about as large as the units allow."""
    sizes = np.asarray(sizes)
    groups = max(1, min(blocks, len(sizes)))
    out = np.empty(len(sizes), dtype=np.int64)
    out[np.argsort(-sizes, kind="stable")] = np.arange(len(sizes)) % groups
    return out


def extra_variance(construction: str, leave_out: Callable[[str], np.ndarray]) -> np.ndarray:
    """The variance ``[C]`` a ``crossed`` construction adds to the bootstrap's, from the estimates
    refitted without each group of a delete-a-group jackknife (``leave_out(by)`` ``[G × C]``, by
    ``"workers"`` or ``"answers"``), one rule for every label-based figure.

    Crossed random effects (Owen 2007, "The pigeonhole bootstrap"): with the estimate's error split
    into a query part, a worker part and an answer part (the answers' own noise), resampling the
    queries (each with its answers) sees the queries' and the answers' parts, and a jackknife over
    the workers sees the workers' and the answers' parts; a jackknife over single answers sees
    all three at the answers' scale (queries' and workers' parts each once per answer). So
    ``crossed`` adds V_workers (the answers' part counted twice: wide), and ``crossed_net`` adds
    V_workers − V_answers (each part once, to first order), never below 0 (the interval never
    narrower than the bootstrap's)."""
    if construction not in CROSSED:
        raise ValueError(f"interval construction {construction!r} adds no variance")
    workers = jackknife_variance(_columns(leave_out("workers")))
    if not CROSSED[construction][1]:
        return workers
    return np.maximum(workers - jackknife_variance(_columns(leave_out("answers"))), 0.0)


def _columns(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    return values[:, None] if values.ndim == 1 else values


def jackknife_variance(jackknife: np.ndarray) -> np.ndarray:
    """The delete-a-group jackknife variance (G − 1)/G · Σ_g (θ_(g) − θ̄)² per column of
    ``jackknife`` ``[G × C]`` (or ``[G]``: a scalar), NaN rows left out (G: the rows used)."""
    values = np.asarray(jackknife, dtype=np.float64)
    single = values.ndim == 1
    if single:
        values = values[:, None]
    used = (~np.isnan(values)).sum(axis=0)
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        squares = np.nansum((values - np.nanmean(values, axis=0)) ** 2, axis=0)
        out = np.where(used > 1, (used - 1) / np.maximum(used, 1) * squares, np.nan)
    return out[0] if single else out


def widen(draws: np.ndarray, extra: np.ndarray | float) -> np.ndarray:
    """The bootstrap draws ``[B × C]`` (or ``[B]``) stretched about their median by
    √((v + extra)/v), v their variance: draws whose spread carries a variance component the
    resampling left out (``extra``: the workers', :func:`extra_variance`), keeping their shape.
    A percentile interval read from them is the bootstrap's own widened by that factor about the
    draws' median, m + c·(q − m), so it always holds the bootstrap's (m lies between its ends;
    about the estimate, an interval the estimate lies outside of would move, not widen); a
    normal one is θ̂ ± z·√(v + extra). Columns without a usable ``extra`` (NaN) or with v = 0 are
    left as they are. NaN draws stay NaN."""
    values = np.asarray(draws, dtype=np.float64)
    single = values.ndim == 1
    if single:
        values = values[:, None]
    factor = widening(values, extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        centre = np.nanmedian(values, axis=0) if len(values) else np.zeros(values.shape[1])
    centre = np.where(np.isnan(centre), 0.0, centre)
    out = centre + (values - centre) * factor
    return out[:, 0] if single else out


def widening(draws: np.ndarray, extra: np.ndarray | float) -> np.ndarray:
    """The factor :func:`widen` stretches each column by: √((v + extra)/v) (1 where undefined)."""
    values = np.asarray(draws, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    extra = np.broadcast_to(np.asarray(extra, dtype=np.float64), (values.shape[1],))
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        v = np.nanvar(values, axis=0, ddof=1)
        return np.where((v > 0) & np.isfinite(extra), np.sqrt((v + np.maximum(extra, 0.0)) / v), 1.0)


def jackknife_weights(n: int, blocks: int = JACKKNIFE_BLOCKS) -> np.ndarray:
    """``[G × n]`` multiplicities of a delete-a-group jackknife: row g leaves out the items i with
    i mod G = g (weight 0) and keeps the others once; G = min(blocks, n)."""
    groups = max(1, min(blocks, n))
    return (np.arange(n)[None, :] % groups != np.arange(groups)[:, None]).astype(np.float64)


def acceleration(jackknife: np.ndarray) -> np.ndarray:
    """The BCa acceleration a = Σ d³ / (6 (Σ d²)^{3/2}), d_g = mean of the jackknife values − θ_(g),
    per column of ``jackknife`` ``[G × C]`` (or ``[G]``); 0 where the values do not vary, NaN rows
    left out."""
    values = np.asarray(jackknife, dtype=np.float64)
    single = values.ndim == 1
    if single:
        values = values[:, None]
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        d = np.nanmean(values, axis=0) - values
        squares = np.nansum(d**2, axis=0)
        a = np.where(squares > 0, np.nansum(d**3, axis=0) / (6.0 * squares**1.5), 0.0)
    return a[0] if single else a


def bootstrap_interval(
    draws: np.ndarray,
    point: np.ndarray | float,
    level: float = LEVEL,
    construction: str = LABEL_INTERVAL,
    accel: np.ndarray | float | None = None,
    min_usable: float = 0.0,
    extra: np.ndarray | float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The ``construction`` interval (module docstring) of every column of ``draws`` ``[B × C]``
    (or ``[B]``: then scalars) around ``point`` ``[C]``. ``accel``: ``bca``'s acceleration per
    column (:func:`acceleration`; required for ``bca``). NaN draws are left out; NaN bounds where
    fewer than ``min_usable`` of the draws are usable, where no draw is or where the point is NaN.
    ``extra``: the variance per column the ``crossed`` constructions add (:func:`extra_variance`;
    required for them): each is the percentile or normal interval of the :func:`widen`-ed draws.
    """
    if construction not in CONSTRUCTIONS:
        raise ValueError(f"interval construction {construction!r}: expected one of {', '.join(CONSTRUCTIONS)}")
    if construction == "bca" and accel is None:
        raise ValueError("the bca interval needs the acceleration (a jackknife of the estimate)")
    if needs_workers(construction):
        if extra is None:
            raise ValueError(f"the {construction} interval needs the workers' variance (a jackknife over workers)")
        draws, construction = widen(draws, extra), CROSSED[construction][0]
    values = np.asarray(draws, dtype=np.float64)
    single = values.ndim == 1
    if single:
        values = values[:, None]
    columns = values.shape[1]
    centre = np.broadcast_to(np.asarray(point, dtype=np.float64), (columns,))
    a = np.broadcast_to(np.asarray(0.0 if accel is None else accel, dtype=np.float64), (columns,))
    alpha = (1.0 - level) / 2.0
    low, high = np.full(columns, np.nan), np.full(columns, np.nan)
    for j in range(columns):
        column = values[:, j]
        column = column[~np.isnan(column)]
        if not len(column) or len(column) < min_usable * len(values) or np.isnan(centre[j]):
            continue
        low[j], high[j] = _one(column, float(centre[j]), alpha, construction, float(a[j]))
    return (float(low[0]), float(high[0])) if single else (low, high)


def _one(draws: np.ndarray, point: float, alpha: float, construction: str, a: float) -> tuple[float, float]:
    if construction == "percentile":
        return tuple(float(x) for x in np.quantile(draws, [alpha, 1.0 - alpha]))
    if construction == "basic":
        q_low, q_high = np.quantile(draws, [alpha, 1.0 - alpha])
        return float(2 * point - q_high), float(2 * point - q_low)
    if construction == "normal":
        half = _NORMAL.inv_cdf(1.0 - alpha) * (float(np.std(draws, ddof=1)) if len(draws) > 1 else 0.0)
        return point - half, point + half
    b = len(draws)
    # Ties counted half; the share kept within half a draw of 0 and 1 so z₀ stays finite.
    share = ((draws < point).sum() + 0.5 * (draws == point).sum()) / b
    z0 = _NORMAL.inv_cdf(min(max(share, 0.5 / b), 1.0 - 0.5 / b))
    levels = []
    for p in (alpha, 1.0 - alpha):
        z = z0 + _NORMAL.inv_cdf(p)
        levels.append(_NORMAL.cdf(z0 + z / (1.0 - a * z)))
    return tuple(float(x) for x in np.quantile(draws, levels))


def bootstrap_p(
    draws: np.ndarray,
    point: np.ndarray | float,
    construction: str = LABEL_INTERVAL,
    accel: np.ndarray | float | None = None,
    min_usable: float = 0.0,
    extra: np.ndarray | float | None = None,
) -> np.ndarray:
    """Two-sided bootstrap p of "the quantity is 0" per column of ``draws`` ``[B × C]``, inverting
    ``construction``'s interval: p ≤ α exactly when the (1 − α) interval of
    :func:`bootstrap_interval` excludes 0 (up to one draw's resolution: shares are (1 + m)/(B + 1),
    so a bootstrap p is never 0). NaN where the interval is undefined.

    percentile: 2·min(s(θ* ≤ 0), s(θ* ≥ 0)); basic: the same for the reflected draws 2θ̂ − θ*;
    normal: 2(1 − Φ(|θ̂|/sd)); bc/bca: with w = Φ⁻¹(s(θ* ≤ 0)) − z₀ the lower bound is above 0 iff
    α/2 > Φ(w/(1 + a·w) − z₀), and the upper one likewise on the reflected draws (z₀ → −z₀, a → −a);
    the crossed ones: percentile or normal on the :func:`widen`-ed draws.
    """
    if construction not in CONSTRUCTIONS:
        raise ValueError(f"interval construction {construction!r}: expected one of {', '.join(CONSTRUCTIONS)}")
    if needs_workers(construction):
        if extra is None:
            raise ValueError(f"the {construction} interval needs the workers' variance (a jackknife over workers)")
        draws, construction = widen(draws, extra), CROSSED[construction][0]
    values = np.asarray(draws, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    columns = values.shape[1]
    centre = np.broadcast_to(np.asarray(point, dtype=np.float64), (columns,))
    a = np.broadcast_to(np.asarray(0.0 if accel is None else accel, dtype=np.float64), (columns,))
    out = np.full(columns, np.nan)
    for j in range(columns):
        column = values[:, j]
        column = column[~np.isnan(column)]
        b, theta = len(column), float(centre[j])
        if not b or b < min_usable * len(values) or np.isnan(theta):
            continue
        if construction == "normal":
            sd = float(np.std(column, ddof=1)) if b > 1 else 0.0
            out[j] = 1.0 if sd == 0 and theta == 0 else (2.0 * (1.0 - _NORMAL.cdf(abs(theta) / sd)) if sd else 0.0)
            continue
        if construction == "basic":
            column = 2.0 * theta - column
        below = (1.0 + (column <= 0).sum()) / (b + 1.0)
        above = (1.0 + (column >= 0).sum()) / (b + 1.0)
        if construction in ("percentile", "basic"):
            out[j] = min(1.0, 2.0 * min(below, above))
            continue
        share = ((column < theta).sum() + 0.5 * (column == theta).sum()) / b
        z0 = _NORMAL.inv_cdf(min(max(share, 0.5 / b), 1.0 - 0.5 / b))
        sides = []
        for s, z, acc in ((min(below, 1.0 - 0.5 / b), z0, float(a[j])), (min(above, 1.0 - 0.5 / b), -z0, -float(a[j]))):
            w = _NORMAL.inv_cdf(s) - z
            sides.append(_NORMAL.cdf(w / (1.0 + acc * w) - z) if 1.0 + acc * w > 0 else 1.0)
        out[j] = min(1.0, 2.0 * min(sides))
    return out


def extended(low: np.ndarray, high: np.ndarray, bias: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The interval ``[low, high]`` joined with itself moved by −``bias`` (the estimate's expected error,
    estimate − truth): a positive bias lowers the low end by it, a negative one raises the high end. The
    bias is added to the side where the truth may lie, not removed from the point, for a bias that is
    sized only roughly (:meth:`genderbias.crowd.label_uncertainty.CorrectedFit.calibration_bias`). None: unchanged."""
    if bias is None:
        return low, high
    bias = np.nan_to_num(np.asarray(bias, dtype=np.float64))
    return low - np.maximum(bias, 0.0), high - np.minimum(bias, 0.0)


def wilson_interval(
    p: np.ndarray | float, n: np.ndarray | float, *, level: float = LEVEL
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's score interval ``(low, high)`` at ``level`` of a proportion ``p`` out of ``n`` (Wilson 1927;
    Agresti & Coull 1998): (p̂ + z²/2n ± z √(p̂(1 − p̂)/n + z²/4n²)) / (1 + z²/n), clipped to [0, 1].

    ``n`` may be fractional (a Kish effective size) and both may be arrays. Wilson rather than Wald because
    the shares it is given are often near 0 or 1 (accuracies routed on, the non-gendered share of a small
    pool), where Wald's interval collapses or passes the bounds. The one interval of a share: the study
    plan's, the dataset card's and routing's."""
    z = _NORMAL.inv_cdf(1 - (1 - level) / 2)
    p, n = np.asarray(p, dtype=float), np.asarray(n, dtype=float)
    denominator = 1 + z**2 / n
    centre = (p + z**2 / (2 * n)) / denominator
    half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denominator
    return np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)

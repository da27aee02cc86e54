"""Bootstrap interval constructions: the one place that turns bootstrap draws into an interval for the
label-based figures (:mod:`genderbias.crowd.label_uncertainty`, :mod:`genderbias.crowd.reliability`) and says
which construction they use (:data:`LABEL_INTERVAL`). Pure. The constructions, compared by simulated coverage:
docs/metrics.md, "Interval constructions compared", and docs/quality.md, "Too sure, and by how much".

``percentile``, ``basic``, ``normal``, ``bc`` and ``bca`` (Efron 1987; Efron & Tibshirani 1993, §14.3: the
acceleration from a delete-a-group jackknife over the queries) are the textbook's. ``crossed`` and ``crossed_net``
(and their ``_normal`` forms) widen the draws by the **workers' variance component** (:func:`extra_variance`,
:func:`widen`): the bootstrap resamples queries with their answers but never redraws the workers, whose fitted
confusion matrices' error is in every query they answered (a crossed design, Owen 2007).

The product's rule (:data:`LABEL_INTERVAL`, ``checked``) picks by whether the crowd model is trusted (:data:`RULES`):
where its check passes and the check of errors shared by query passes clearly, the refitted bootstrap's own
spread is the estimate's and its ``normal`` interval covers as the true labels' does at 1.1-1.3 times the
known-confusion floor; elsewhere ``crossed``, whose jackknife over the workers also holds a misfit too weak for the
checks to fire, and which the caller extends by the bias where the check warns. Figures: docs/quality.md, "The
interval where the crowd model is right".
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from statistics import NormalDist

import numpy as np

from genderbias.ranking.defaults import LEVEL

__all__ = [
    "CLEAR_P", "CONSTRUCTIONS", "DESCRIPTIONS", "JACKKNIFE_BLOCKS", "LABEL_INTERVAL", "RULES", "acceleration",
    "bootstrap_interval", "bootstrap_p", "construction_for", "describe", "extended", "extra_variance",
    "jackknife_variance", "jackknife_weights", "needs_jackknife", "needs_workers", "unit_groups", "widen", "widening",
    "wilson_interval",
]  # fmt: skip

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
#: Rules that pick a label-based interval's construction by whether the crowd model is trusted
#: (:meth:`genderbias.crowd.label_probabilities.LabelModel.trusted`): (trusted, not). A construction's own name is
#: the rule that always takes it (the product's before 2026-11-29).
RULES = {"checked": ("normal", "crossed")}
#: The check of errors shared by query passes clearly, as a trusted crowd model needs, when every p it read is
#: above this (four times a source's level, 0.025): between the two, shared errors too weak to fire still widen
#: the intervals (chosen on simulated studies: docs/quality.md, "The interval where the crowd model is right").
CLEAR_P = 0.1
#: The rule of every label-based interval (report, command, API, methods text, de-noised accuracy): chosen by
#: simulated coverage and width, not tuned (module docstring).
LABEL_INTERVAL = "checked"
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
DESCRIPTIONS["checked"] = (
    "normal bootstrap interval (the crowd model refitted in every draw) where the crowd model's check passes and the "
    f"check of errors shared by query passes clearly (both p above {CLEAR_P}); elsewhere the {DESCRIPTIONS['crossed']}, "
    "reaching as far as the posteriors' bias where the crowd model's check warns"
)


def construction_for(rule: str = LABEL_INTERVAL, *, trusted: bool) -> str:
    """The construction ``rule`` (:data:`RULES`, or a construction's own name) takes where the crowd model is
    ``trusted`` or not."""
    if rule in RULES:
        return RULES[rule][0 if trusted else 1]
    if rule not in CONSTRUCTIONS:
        raise ValueError(f"interval rule {rule!r}: expected one of {', '.join([*RULES, *CONSTRUCTIONS])}")
    return rule


def describe(construction: str = LABEL_INTERVAL) -> str:
    """``construction`` (or a rule of :data:`RULES`) in words (:data:`DESCRIPTIONS`)."""
    return DESCRIPTIONS[construction]


def needs_jackknife(construction: str) -> bool:
    """Whether ``construction`` needs the jackknife (:func:`acceleration`): only ``bca``."""
    return construction == "bca"


def needs_workers(construction: str) -> bool:
    """Whether ``construction`` needs the workers' variance (:func:`jackknife_variance` of a jackknife
    over the workers)."""
    return construction in CROSSED


def unit_groups(sizes: np.ndarray, blocks: int = JACKKNIFE_BLOCKS) -> np.ndarray:
    """Each unit's group (0 … G − 1, G = min(blocks, units)) of a delete-a-group jackknife over units of unequal
    ``sizes``: dealt round-robin in decreasing size, so the groups are about as large as the units allow."""
    sizes = np.asarray(sizes)
    groups = max(1, min(blocks, len(sizes)))
    out = np.empty(len(sizes), dtype=np.int64)
    out[np.argsort(-sizes, kind="stable")] = np.arange(len(sizes)) % groups
    return out


def extra_variance(construction: str, leave_out: Callable[[str], np.ndarray]) -> np.ndarray:
    """The variance ``[C]`` a crossed construction adds to the bootstrap's, from the estimates refitted without
    each jackknife group (``leave_out(by)`` ``[G × C]``, by ``"workers"`` or ``"answers"``).

    Crossed random effects (Owen 2007, "The pigeonhole bootstrap"): resampling queries sees the queries' and the
    answers' error parts, a jackknife over workers the workers' and the answers', one over single answers all three
    at the answers' scale. So ``crossed`` adds V_workers (answers counted twice: wide) and ``crossed_net``
    max(V_workers − V_answers, 0) (each once, to first order; never narrower than the bootstrap's)."""
    if construction not in CROSSED:
        raise ValueError(f"interval construction {construction!r} adds no variance")
    workers = jackknife_variance(_columns(leave_out("workers")))
    if not CROSSED[construction][1]:
        return workers
    return np.maximum(workers - jackknife_variance(_columns(leave_out("answers"))), 0.0)


def _columns(values: np.ndarray) -> np.ndarray:
    return _as_columns(values)[0]


def _as_columns(values) -> tuple[np.ndarray, bool]:
    """``values`` as float columns ``[N × C]``, and whether they came as one ``[N]`` (a result is then a scalar)."""
    values = np.asarray(values, dtype=np.float64)
    return (values[:, None], True) if values.ndim == 1 else (values, False)


def jackknife_variance(jackknife: np.ndarray) -> np.ndarray:
    """The delete-a-group jackknife variance (G − 1)/G · Σ_g (θ_(g) − θ̄)² per column of
    ``jackknife`` ``[G × C]`` (or ``[G]``: a scalar), NaN rows left out (G: the rows used)."""
    values, single = _as_columns(jackknife)
    used = (~np.isnan(values)).sum(axis=0)
    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        squares = np.nansum((values - np.nanmean(values, axis=0)) ** 2, axis=0)
        out = np.where(used > 1, (used - 1) / np.maximum(used, 1) * squares, np.nan)
    return out[0] if single else out


def widen(draws: np.ndarray, extra: np.ndarray | float) -> np.ndarray:
    """The draws ``[B × C]`` (or ``[B]``) stretched about their median by √((v + extra)/v), v their variance, to carry
    a variance component the resampling left out, keeping their shape. About the median, not the estimate, so
    the percentile interval m + c·(q − m) always holds the bootstrap's (it widens, never moves); a normal one is
    θ̂ ± z·√(v + extra). Columns with NaN ``extra`` or v = 0 are unchanged; NaN draws stay NaN."""
    values, single = _as_columns(draws)
    factor = widening(values, extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        centre = np.nanmedian(values, axis=0) if len(values) else np.zeros(values.shape[1])
    centre = np.where(np.isnan(centre), 0.0, centre)
    out = centre + (values - centre) * factor
    return out[:, 0] if single else out


def widening(draws: np.ndarray, extra: np.ndarray | float) -> np.ndarray:
    """The factor :func:`widen` stretches each column by: √((v + extra)/v) (1 where undefined)."""
    values = _columns(draws)
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
    """The BCa acceleration a = Σ d³ / (6 (Σ d²)^{3/2}), d_g = θ̄ − θ_(g), per column of ``jackknife`` ``[G × C]``
    (or ``[G]``); 0 where the values do not vary, NaN rows left out."""
    values, single = _as_columns(jackknife)
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
    construction: str = "percentile",
    accel: np.ndarray | float | None = None,
    min_usable: float = 0.0,
    extra: np.ndarray | float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The ``construction`` interval of every column of ``draws`` ``[B × C]`` (``[B]``: scalars) around ``point``.

    ``accel``: ``bca``'s acceleration per column (:func:`acceleration`); ``extra``: the crossed constructions'
    added variance (:func:`extra_variance`); each required for those. NaN draws are left out; NaN bounds where
    fewer than ``min_usable`` of the draws are usable, where none is or where the point is NaN.
    """
    if construction == "bca" and accel is None:
        raise ValueError("the bca interval needs the acceleration (a jackknife of the estimate)")
    values, single, centre, a, construction = _prepared(draws, point, construction, accel, extra)
    columns = values.shape[1]
    alpha = (1.0 - level) / 2.0
    low, high = np.full(columns, np.nan), np.full(columns, np.nan)
    for j in range(columns):
        column = values[:, j]
        column = column[~np.isnan(column)]
        if not len(column) or len(column) < min_usable * len(values) or np.isnan(centre[j]):
            continue
        low[j], high[j] = _one(column, float(centre[j]), alpha, construction, float(a[j]))
    return (float(low[0]), float(high[0])) if single else (low, high)


def _prepared(draws, point, construction: str, accel, extra):
    """(draws ``[B × C]``, whether given as ``[B]``, point ``[C]``, acceleration ``[C]``, the construction to apply):
    a crossed construction becomes its percentile or normal one on the :func:`widen`-ed draws."""
    if construction not in CONSTRUCTIONS:
        raise ValueError(f"interval construction {construction!r}: expected one of {', '.join(CONSTRUCTIONS)}")
    if needs_workers(construction):
        if extra is None:
            raise ValueError(f"the {construction} interval needs the workers' variance (a jackknife over workers)")
        draws, construction = widen(draws, extra), CROSSED[construction][0]
    values, single = _as_columns(draws)
    columns = values.shape[1]
    centre = np.broadcast_to(np.asarray(point, dtype=np.float64), (columns,))
    a = np.broadcast_to(np.asarray(0.0 if accel is None else accel, dtype=np.float64), (columns,))
    return values, single, centre, a, construction


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
    construction: str = "percentile",
    accel: np.ndarray | float | None = None,
    min_usable: float = 0.0,
    extra: np.ndarray | float | None = None,
) -> np.ndarray:
    """Two-sided bootstrap p of "the quantity is 0" per column, inverting ``construction``'s interval: p ≤ α exactly
    when :func:`bootstrap_interval`'s (1 − α) interval excludes 0, up to one draw (shares are (1 + m)/(B + 1), so
    p is never 0). NaN where the interval is undefined; arguments as :func:`bootstrap_interval`.

    bc/bca: with w = Φ⁻¹(s(θ* ≤ 0)) − z₀ the lower bound is above 0 iff α/2 > Φ(w/(1 + a·w) − z₀), the upper one
    likewise on the reflected draws (z₀ → −z₀, a → −a).
    """
    values, _, centre, a, construction = _prepared(draws, point, construction, accel, extra)
    columns = values.shape[1]
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
    """``[low, high]`` joined with itself moved by −``bias`` (estimate − truth; None: unchanged): the bias widens the
    side where the truth may lie rather than moving the point, as it is sized only roughly
    (:meth:`genderbias.crowd.label_uncertainty.CorrectedFit.calibration_bias`)."""
    if bias is None:
        return low, high
    bias = np.nan_to_num(np.asarray(bias, dtype=np.float64))
    return low - np.maximum(bias, 0.0), high - np.minimum(bias, 0.0)


def wilson_interval(
    p: np.ndarray | float, n: np.ndarray | float, *, level: float = LEVEL
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's score interval ``(low, high)`` at ``level`` of a proportion ``p`` out of ``n`` (Wilson 1927;
    Agresti & Coull 1998), clipped to [0, 1]; ``n`` may be fractional (a Kish effective size), both may be arrays.

    The one interval of a share (study plan, dataset card, routing): Wilson rather than Wald because those shares
    are often near 0 or 1, where Wald's interval collapses or passes the bounds."""
    z = _NORMAL.inv_cdf(1 - (1 - level) / 2)
    p, n = np.asarray(p, dtype=float), np.asarray(n, dtype=float)
    denominator = 1 + z**2 / n
    centre = (p + z**2 / (2 * n)) / denominator
    half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denominator
    return np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)

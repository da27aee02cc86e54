"""Label uncertainty in a bias figure: the runs' means on the *truly* non-gendered queries,
estimated from every query's label probabilities, with an interval that carries both the
labels' uncertainty and the sampling of the queries.

Pure (numpy, pandas; no Django). A report on a batch's labels measures the runs on the
point-estimate set S (the queries whose final label is non-gendered, as the export writes
them); its query-only interval (:func:`genderbias.stats.significance.bootstrap_ci` over S) treats S as
known. It is not: every judged query q has a probability vector π_q over the labels
(n, f, m, o): the crowd's Dawid–Skene posterior (gold-seeded), one-hot for a researcher's
ruling, and for a machine-accepted label the crowd's label distribution in the calibration
sample among the machine's labels of the same label and confidence band.

Estimator (method of moments under non-differential label noise)
----------------------------------------------------------------
Let v_q be a run's per-query value and T_q the true label. If annotators' and the machine's
errors do not depend on the ranking given the true label (v ⟂ label evidence | T) and π_q is
calibrated, then E[v_q | evidence] = Σ_c π_qc μ_c with μ_c = E[v | T = c]: the values are a
linear mixture of the class means with known weights. The class means are the least-squares
coefficients β = (PᵀP)⁻¹ Pᵀ v over all N judged queries (P: N × K probabilities), and β_n is
the mean over the truly non-gendered queries — the *corrected* value. A query labelled
non-gendered by a slim majority contributes mostly to μ_n, partly to the gendered means; a
gendered query that slipped into S no longer drags the estimate. (Weighting S's queries by
π_n alone, or drawing memberships from π and averaging, is biased when gendered queries are
more biased — the case that matters: E[π v] mixes in Σ π(1 − π) of their values.)

Interval: queries resampled with replacement (multinomial weights W_b), β re-fitted per draw
(one K × K solve per draw and missing-value pattern, all columns at once); the **combined
interval** is the bootstrap interval of β_n,b by :data:`genderbias.stats.intervals.LABEL_INTERVAL` (the
percentile interval widened by the workers' variance component, from delete-a-group jackknives
over the workers and over the answers: ``crossed_net``; the constructions compared by simulation:
:mod:`genderbias.stats.intervals`, :class:`CorrectedFit`). All runs and metrics share the draws, so
paired differences (run − baseline per query, also linear) are coherent.

- **Share of the width the labels contribute**: 1 − (query-only width ÷ combined width),
  clipped to [0, 1].
- **Test** (a report on a batch marks significance by it): the two-sided bootstrap p of the
  corrected paired difference that inverts the combined interval (:func:`genderbias.stats.intervals.bootstrap_p`;
  for the percentile interval p = min(1, 2·(1 + min(#{β* ≤ 0}, #{β* ≥ 0}))/(B + 1))) —
  unadjusted, below α only when the combined (1 − α) interval excludes 0 (up to one draw's
  resolution) — Holm-adjusted within the project's family (:data:`genderbias.stats.significance.POLICY`).
- **Which labels get a mean of their own** (:func:`design`): a label other than n needs at least
  :data:`MIN_MASS` queries' worth of probability, else its mean is barely identified and its
  noise spills into μ_n. The labels below that are pooled into one "other" column (one mean
  for them); a pool still below it joins the largest gendered label; and when all the
  gendered probability together is below it, the corrected value is the π_n-weighted mean
  (what the few uncertain queries could shift is then at most that mass ÷ N of a range).
  A draw in which a kept label's mass falls below :data:`MIN_DRAW_MASS` (or the fit is
  ill-conditioned) is left out; with fewer than :data:`MIN_USABLE_DRAWS` of the draws usable
  the interval is undefined (shown as –): too few queries to separate the labels.

Coverage, as simulated: with the true posteriors (``tests/metrics/test_label_uncertainty.py``)
the combined interval covers at its nominal rate within Monte-Carlo error where the query-only
interval under-covers; with the fitted crowd model on a realistic crowd
(``tests/metrics/test_crowd_coverage.py``, ``manage.py crowd_coverage``; docs/metrics.md,
"Coverage, as simulated") the bootstrap's percentile interval fell short at 1,000 queries (0.92 and
0.90 over 176 studies): the bootstrap redraws the queries, not the workers. With the workers'
variance component added, the value, the difference and the de-noised accuracy each at ≥ 0.93
(docs/metrics.md; these are simulations' figures, so the methods text does not state them: it
states the crowd model's check on the study's own answers, :mod:`publishing.methods_text`). The assumption is stated on the report page and in
``docs/metrics.md``: errors that depend on the ranker's output (a query both ambiguous to people
and unusual for the rankers) are outside what any label model can correct;
:func:`dependence_table` is the sensitivity check a researcher runs on their own batch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from genderbias.ranking.defaults import DEFAULT_SAMPLES, DEFAULT_SEED, LABEL_UNCERTAINTY_COLUMNS
from genderbias.stats import intervals
from genderbias.stats.significance import ALPHA, LEVEL, bootstrap_ci, holm, resampling_weights

#: The label whose class mean is the report's value.
NON_GENDERED = "n"
#: A label other than n gets its own mean only with at least this many queries' worth of probability.
MIN_MASS = 10.0
#: A bootstrap draw is left out when a label's mass in it is below this or the fit is ill-conditioned.
MIN_DRAW_MASS = 0.5
MAX_CONDITION = 1e8
#: Fewer usable draws than this share and the combined interval is undefined (too few queries).
MIN_USABLE_DRAWS = 0.9

#: The policy of a report on a batch's labels, as its tables state it.
COMBINED_POLICY = {
    "interval": intervals.describe(),
    "test": "bootstrap of the label-corrected paired difference (queries resampled, class means "
    "re-fitted from every query's label probabilities), two-sided",
    "family": "every run against the baseline for one metric, variant and cutoff",
    "correction": "Holm",
    "alpha": ALPHA,
}


def policy_text(baseline: str | None, interval: str | None = None) -> str:
    """The combined test's policy in one sentence, for captions and the command's footnotes (``interval``:
    the construction in words that computed the intervals, today's by default)."""
    if baseline is None:
        return "No baseline: no significance tests. Intervals: queries and labels (label-corrected means)."
    return (
        f"p: {COMBINED_POLICY['test']}, against {baseline}; family: {COMBINED_POLICY['family']}; "
        f"{COMBINED_POLICY['correction']}-adjusted; * p < {ALPHA} (the combined interval, a "
        f"{interval or COMBINED_POLICY['interval']}, excludes 0)."
    )


def label_map(probabilities: pd.DataFrame) -> tuple[np.ndarray, bool]:
    """How the labels become the regression's columns: ``(T, weighted)``, P = probabilities · T.

    ``T`` is labels × columns, column 0 for n. Labels other than n with at least
    :data:`MIN_MASS` of probability keep a column; the others are pooled into one column, or, if
    the pool is below :data:`MIN_MASS` too, added to the largest kept gendered label. With no
    gendered label (or pool) reaching it, ``weighted`` is true: one column of ones, rows weighted
    by π_n, i.e. the π_n-weighted mean.
    """
    labels = list(probabilities.columns)
    mass = probabilities.astype(float).sum(axis=0)
    others = [c for c in labels if c != NON_GENDERED]
    kept = [c for c in others if mass[c] >= MIN_MASS]
    small = [c for c in others if c not in kept]
    pooled = float(sum(mass[c] for c in small))
    width = 1 + len(kept) + (1 if small and pooled >= MIN_MASS else 0)
    if width == 1:
        return np.eye(len(labels), 1, -labels.index(NON_GENDERED)), True
    t = np.zeros((len(labels), width))
    t[labels.index(NON_GENDERED), 0] = 1.0
    for j, c in enumerate(kept, start=1):
        t[labels.index(c), j] = 1.0
    target = width - 1 if pooled >= MIN_MASS else 1 + int(np.argmax([mass[c] for c in kept]))
    for c in small:
        t[labels.index(c), target] = 1.0
    return t, False


def design(probabilities: pd.DataFrame) -> tuple[np.ndarray, int, np.ndarray | None]:
    """The regression's design: ``(P, column of n, row weights)`` (:func:`label_map`)."""
    t, weighted = label_map(probabilities)
    pi = probabilities.astype(float).to_numpy()
    if weighted:
        return np.ones((len(pi), 1)), 0, pi @ t[:, 0]
    return pi @ t, 0, None


def design_draws(probabilities: pd.DataFrame, draws: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Each draw's design ``([B × N × C], row weights [B × N] or None)``, with the columns of the
    point estimate's :func:`label_map` (which labels get a mean of their own is decided once)."""
    t, weighted = label_map(probabilities)
    draws = np.asarray(draws, dtype=np.float64)
    if draws.shape[1:] != probabilities.shape:
        raise ValueError(f"label probability draws of shape {draws.shape[1:]}, expected {probabilities.shape}")
    if weighted:
        return np.ones((*draws.shape[:2], 1)), draws @ t[:, 0]
    return draws @ t, None


#: Draws per block in :func:`class_means` (bounds its temporary arrays: a block × N × K of weighted probabilities).
DRAW_BLOCK = 64


def class_means(
    probabilities: np.ndarray,
    values: np.ndarray,
    weights: np.ndarray | None = None,
    row_weights: np.ndarray | None = None,
) -> np.ndarray:
    """Least-squares class means β (``[K × C]``; ``[B × K × C]`` with ``weights`` ``[B × N]``).

    ``probabilities``: ``[N × K]`` label probabilities, or ``[B × N × K]`` one matrix per draw (the
    crowd model refitted in each: :func:`combined_summary`'s ``draws``); ``values``: ``[N × C]``,
    NaN where a query has no value for that column (it is left out of that column's fit).
    ``row_weights``: ``[N]`` or ``[B × N]``. A singular fit (a label with no mass in a draw) gives
    NaN for that draw.

    Computed as matrix products, by blocks of :data:`DRAW_BLOCK` draws: per draw, Pᵀ W P and
    Pᵀ W v for every column at once over all queries (a missing value counts as 0 in v), then for
    each pattern of missing values the rows it lacks taken out of Pᵀ W P and of the labels' mass
    (or, when it lacks most rows, its own rows summed). The same sums as a fit on each column's
    present rows, in another order (equal within rounding: ``tests/metrics/test_class_means.py``).
    """
    p = np.asarray(probabilities, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    single = weights is None
    n, k = p.shape[-2], p.shape[-1]
    w = np.ones((1, n)) if single else np.asarray(weights, dtype=np.float64)
    if row_weights is not None:  # weighted least squares (the π_n-weighted mean of :func:`design`)
        w = w * np.asarray(row_weights, dtype=np.float64).reshape(-1, n)
    per_draw = p.ndim == 3
    draws = w.shape[0]
    out = np.full((draws, k, values.shape[1]), np.nan)
    present = ~np.isnan(values)
    filled = np.where(present, values, 0.0)
    patterns: dict[bytes, list[int]] = {}
    for j in range(values.shape[1]):
        patterns.setdefault(present[:, j].tobytes(), []).append(j)
    groups = [(present[:, columns[0]], columns) for columns in patterns.values()]
    for first in range(0, draws, DRAW_BLOCK):
        block = slice(first, min(first + DRAW_BLOCK, draws))
        wb = w[block]  # [b × N]
        pb = p[block] if per_draw else p[None]  # [b × N × K] or [1 × N × K]
        wp = wb[:, :, None] * pb  # [b × N × K]: each query's weighted probabilities
        wpt = wp.transpose(0, 2, 1)  # [b × K × N]
        gram = wpt @ pb  # [b × K × K]
        mass = wp.sum(axis=1)  # [b × K]
        moments = wpt @ filled  # [b × K × C]: a missing value adds nothing
        for rows, columns in groups:
            absent = ~rows
            if not absent.any():
                g, m = gram, mass
            elif absent.sum() * 2 <= n:  # few rows lacking: take them out
                pa = pb[:, absent, :]
                wpa = wp[:, absent, :]
                g, m = gram - wpa.transpose(0, 2, 1) @ pa, mass - wpa.sum(axis=1)
            else:  # most lacking: sum the present ones
                pr, wpr = pb[:, rows, :], wp[:, rows, :]
                g, m = wpr.transpose(0, 2, 1) @ pr, wpr.sum(axis=1)
            # A draw in which a label has (almost) no mass cannot estimate its mean: left out (NaN).
            solvable = (m >= MIN_DRAW_MASS).all(axis=1) & (np.linalg.cond(g) < MAX_CONDITION)
            if solvable.any():
                target = np.arange(block.start, block.stop)[solvable]
                out[np.ix_(target, np.arange(k), columns)] = np.linalg.solve(
                    g[solvable], moments[solvable][:, :, columns]
                )
    return out[0] if single else out


class CorrectedFit:
    """The label-corrected mean's point estimate and its bootstrap (and, for ``bca``, jackknife)
    replicates for any value columns, all sharing one set of resampled queries and refitted label
    probabilities (the crowd model is refitted once per draw, not once per column).

    ``probabilities`` and ``draws`` as :func:`combined_summary` takes them; ``jackknife``: also
    refit on :func:`genderbias.stats.intervals.jackknife_weights` (needed by ``bca``; default: when
    :data:`genderbias.stats.intervals.LABEL_INTERVAL` needs it). ``leave_out``: given ``"workers"`` or
    ``"answers"``, the label probabilities with the crowd model refitted without each group of a
    delete-a-group jackknife ``[G × N × K]``
    (:meth:`genderbias.crowd.label_probabilities.LabelModel.leave_out_draws`), whose spread gives
    the workers' variance component (:meth:`extra_variance`; the ``crossed`` intervals); each read
    once, when first needed. ``recalibrated``: the probabilities as sure as the crowd model is right to be
    (``[N × K]``, rows as ``probabilities``), or None when the crowd model's check passes
    (:meth:`genderbias.crowd.label_probabilities.LabelModel.recalibrated`), read once, when first
    needed: the interval is extended by how far they move the estimate (:meth:`calibration_bias`).
    """

    def __init__(
        self,
        probabilities: pd.DataFrame,
        samples: int = DEFAULT_SAMPLES,
        seed: int = DEFAULT_SEED,
        draws: Callable[..., np.ndarray] | None = None,
        jackknife: bool | None = None,
        leave_out: Callable[[str], np.ndarray] | None = None,
        recalibrated: Callable[[], pd.DataFrame | None] | None = None,
    ) -> None:
        self._leave_out, self._p_left_out = leave_out, {}
        self._recalibrated, self._calibrated = recalibrated, None
        self.p, self.column, self.row_weights = design(probabilities)
        self.probabilities, self.shape = probabilities, probabilities.shape
        n = len(probabilities)
        self.weights = resampling_weights(n, samples, seed)
        self.p_draws, self.row_weight_draws = self.p, self.row_weights
        if draws is not None:
            self.p_draws, self.row_weight_draws = design_draws(probabilities, draws(self.weights))
        if jackknife is None:
            jackknife = intervals.needs_jackknife(intervals.LABEL_INTERVAL)
        self.jack_weights = intervals.jackknife_weights(n) if jackknife else None
        self.p_jack, self.row_weight_jack = self.p, self.row_weights
        if jackknife and draws is not None:
            # The gold answers (no row of the table) are kept once each: a jackknife leaves out, it does not resample.
            self.p_jack, self.row_weight_jack = design_draws(
                probabilities, draws(self.jack_weights, resample_others=False)
            )

    def estimates(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(point [C], bootstrap draws [B × C], jackknife [G × C] or None)`` of ``values`` ``[N × C]``."""
        point = class_means(self.p, values, row_weights=self.row_weights)[self.column]
        fitted = class_means(self.p_draws, values, self.weights, self.row_weight_draws)[:, self.column, :]
        jack = None
        if self.jack_weights is not None:
            jack = class_means(self.p_jack, values, self.jack_weights, self.row_weight_jack)[:, self.column, :]
        return point, fitted, jack

    def left_out_values(self, values: np.ndarray, by: str) -> np.ndarray:
        """``[G × C]``: the corrected means of ``values`` ``[N × C]`` with the crowd model refitted
        without each group of a jackknife ``by`` workers or answers (the queries all kept once);
        ``[0 × C]`` without ``leave_out`` (the probabilities then held as given: no added variance)."""
        values = np.asarray(values, dtype=np.float64)
        if values.ndim == 1:
            values = values[:, None]
        if by not in self._p_left_out:
            raw = self._leave_out(by) if self._leave_out is not None else np.empty((0, *self.shape))
            self._p_left_out[by] = design_draws(self.probabilities, raw) if len(raw) else None
        if self._p_left_out[by] is None:
            return np.empty((0, values.shape[1]))
        p, row_weights = self._p_left_out[by]
        return class_means(p, values, np.ones(p.shape[:2]), row_weights)[:, self.column, :]

    def extra_variance(self, values: np.ndarray, construction: str = intervals.LABEL_INTERVAL) -> np.ndarray | None:
        """``[C]``: the variance a ``crossed`` ``construction`` adds to the bootstrap's
        (:func:`genderbias.stats.intervals.extra_variance` of :meth:`left_out_values`); None for the others."""
        if not intervals.needs_workers(construction):
            return None
        return intervals.extra_variance(construction, lambda by: self.left_out_values(values, by))

    def calibration_bias(self, values: np.ndarray) -> np.ndarray | None:
        """``[C]``: the corrected mean of ``values`` ``[N × C]`` with the probabilities as given − the same
        with ``recalibrated``'s (same labels' means, :func:`design_draws`): the estimate's bias from
        posteriors more (or less) sure than the crowd model is right to be, where its check warns. None
        without ``recalibrated`` or when the check passes."""
        if self._recalibrated is None:
            return None
        if self._calibrated is None:
            table = self._recalibrated()
            self._calibrated = () if table is None else design_draws(
                self.probabilities, table.reindex(index=self.probabilities.index, columns=self.probabilities.columns)
                .to_numpy(dtype=np.float64)[None]
            )  # fmt: skip
        if not self._calibrated:
            return None
        values = np.asarray(values, dtype=np.float64)
        if values.ndim == 1:
            values = values[:, None]
        p, row_weights = self._calibrated
        calibrated = class_means(p, values, np.ones(p.shape[:2]), row_weights)[0, self.column, :]
        given = class_means(self.p, values, row_weights=self.row_weights)[self.column]
        return given - calibrated

    def reach(self, values: np.ndarray, point: np.ndarray, fitted: np.ndarray) -> np.ndarray | None:
        """``[C]``: how far the interval of ``values`` reaches beyond the bootstrap's towards where the truth
        lies, where the crowd model's check warns (None where it passes): the :meth:`calibration_bias` plus
        twice the bootstrap's own estimate of the estimator's bias (mean of the draws ``fitted`` − ``point``),
        the distance from the percentile interval to the basic (reverse-percentile) one. Where the check
        passes the draws' drift over the estimate is not the estimator's bias (docs/metrics.md "Interval
        constructions compared"); where it warns, on simulated crowds it is, in the same direction
        (docs/quality.md "Too sure, and by how much")."""
        bias = self.calibration_bias(values)
        if bias is None:
            return None
        usable = np.isfinite(fitted).sum(axis=0)
        means = np.where(usable > 0, np.nansum(fitted, axis=0) / np.maximum(usable, 1), np.nan)  # no all-NaN warning
        drift = means - np.asarray(point, dtype=np.float64)
        return bias + 2 * np.nan_to_num(drift)

    def interval(
        self, values: np.ndarray, level: float = LEVEL, construction: str = intervals.LABEL_INTERVAL
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(point, low, high, p)``: the ``construction`` interval
        (:func:`genderbias.stats.intervals.bootstrap_interval`) and the two-sided p of "it is 0" that inverts it
        (:func:`genderbias.stats.intervals.bootstrap_p`), undefined (NaN) where fewer than
        :data:`MIN_USABLE_DRAWS` of the draws are usable (too few queries to fit). Where the crowd model does
        not fit (:meth:`reach`), the interval is joined with itself moved by that much
        (:func:`genderbias.stats.intervals.extended`) and p is the larger of the two intervals' (0 lies outside the
        joined interval when it lies outside both)."""
        point, fitted, jack = self.estimates(values)
        accel = intervals.acceleration(jack) if intervals.needs_jackknife(construction) else None
        extra = self.extra_variance(values, construction)
        low, high = intervals.bootstrap_interval(fitted, point, level, construction, accel, MIN_USABLE_DRAWS, extra)
        p = intervals.bootstrap_p(fitted, point, construction, accel, MIN_USABLE_DRAWS, extra)
        bias = self.reach(values, point, fitted)
        if bias is not None:
            low, high = intervals.extended(low, high, bias)
            shift = np.nan_to_num(bias)
            moved = intervals.bootstrap_p(fitted - shift, point - shift, construction, accel, MIN_USABLE_DRAWS, extra)
            p = np.fmax(p, moved)
        return point, low, high, p


def label_share(query_width: np.ndarray, combined_width: np.ndarray) -> np.ndarray:
    """1 − query-only width ÷ combined width, clipped to [0, 1] (NaN when either is undefined)."""
    query_width = np.asarray(query_width, dtype=np.float64)
    combined_width = np.asarray(combined_width, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(combined_width > 0, 1.0 - query_width / combined_width, 0.0)
    share = np.clip(share, 0.0, 1.0)
    return np.where(np.isnan(query_width) | np.isnan(combined_width), np.nan, share)


#: :func:`combined_summary`'s steps, as its ``progress`` names them.
REFITTING = "refitting the crowd model in every bootstrap draw"
RESAMPLING = "resampling the queries"
FITTING = "label-corrected means and intervals (runs and paired differences)"


def combined_summary(
    wide: Mapping[str, pd.DataFrame],
    probabilities: pd.DataFrame,
    in_set: set[str] | frozenset[str],
    summary: pd.DataFrame,
    baseline: str | None = None,
    samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = LEVEL,
    draws: Callable[[np.ndarray], np.ndarray] | None = None,
    leave_out: Callable[[str], np.ndarray] | None = None,
    recalibrated: Callable[[], pd.DataFrame | None] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> pd.DataFrame:
    """``summary`` (one row per run × metric × variant × cutoff, as
    :func:`genderbias.stats.significance.summarise` made it over the point-estimate set S) with
    :data:`genderbias.ranking.defaults.LABEL_UNCERTAINTY_COLUMNS` added, and ``p_value`` replaced by the combined test's
    Holm-adjusted p (the t-test's, Holm-adjusted, kept as ``query_p_value``).

    ``wide``: per run, queries × ``(metric, variant, cutoff)`` values (NaN = no value) of every
    judged query; ``probabilities``: judged qid × label probabilities (rows sum to 1).
    ``draws``: given the bootstrap's query multiplicities ``[B × N]`` (rows of ``probabilities``),
    the label probabilities of every query in each draw ``[B × N × K]`` -- the crowd model refitted
    on the draw (:meth:`genderbias.crowd.label_probabilities.LabelModel.draws`), so that its
    estimation error enters every interval; without it the probabilities are held fixed.
    ``recalibrated``: :class:`CorrectedFit`'s (the intervals extended by the bias of posteriors too sure).
    ``progress``: told ``(step, done, total)`` as the work goes (:data:`REFITTING`, then
    :data:`FITTING` once per run and per paired difference).
    """
    say = progress or (lambda step, done, total: None)
    qids = list(probabilities.index.astype(str))
    say(REFITTING if draws is not None else RESAMPLING, 0, 1)
    fitter = CorrectedFit(probabilities, samples, seed, draws, leave_out=leave_out, recalibrated=recalibrated)
    members = sorted(in_set)
    runs = list(wide)
    fits = len(runs) + (len(runs) - 1 if baseline is not None and baseline in wide else 0)
    fitted = 0
    columns = sorted({key for table in wide.values() for key in table.columns})
    aligned = {run: wide[run].reindex(index=qids, columns=columns).to_numpy(dtype=np.float64) for run in runs}
    rows: dict[tuple, dict] = {}

    def fit(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        nonlocal fitted
        say(FITTING, fitted, fits)
        interval = fitter.interval(values, level)
        fitted += 1
        say(FITTING, fitted, fits)
        return interval

    for run in runs:
        point, low, high, _ = fit(aligned[run])
        for i, key in enumerate(columns):
            rows[(run, *key)] = {"corrected": point[i], "combined_low": low[i], "combined_high": high[i]}
    tests: dict[tuple, float] = {}
    if baseline is not None and baseline in wide:
        base_set = wide[baseline].reindex(index=members, columns=columns).to_numpy(dtype=np.float64)
        for run in runs:
            if run == baseline:
                continue
            point, c_low, c_high, p_values = fit(aligned[run] - aligned[baseline])
            in_set_difference = wide[run].reindex(index=members, columns=columns).to_numpy(dtype=np.float64) - base_set
            if len(members):
                q_low, q_high = bootstrap_ci(in_set_difference, samples, seed, level)
            else:
                q_low = q_high = np.full(len(columns), np.nan)
            shares = label_share(q_high - q_low, c_high - c_low)
            for i, key in enumerate(columns):
                rows[(run, *key)] |= {
                    "difference_low": q_low[i],
                    "difference_high": q_high[i],
                    "difference_corrected": point[i],
                    "difference_combined_low": c_low[i],
                    "difference_combined_high": c_high[i],
                    "difference_label_share": shares[i],
                }
                tests[(run, *key)] = p_values[i]
    adjusted = _holm_by_family(tests)
    out = summary.copy()
    keys = list(zip(out["run"], out["metric"], out["variant"], out["cutoff"].astype(int), strict=True))
    for column in LABEL_UNCERTAINTY_COLUMNS:
        if column not in ("label_share", "query_p_value"):
            out[column] = [_finite(rows.get(key, {}).get(column)) for key in keys]
    share = label_share(
        (out["ci_high"] - out["ci_low"]).to_numpy(dtype=np.float64),
        (out["combined_high"] - out["combined_low"]).to_numpy(dtype=np.float64),
    )
    out["label_share"] = [_finite(x) for x in share]
    out["query_p_value"] = pd.Series(list(out["p_value"]), index=out.index, dtype=object)
    out["p_value"] = pd.Series([adjusted.get(key) for key in keys], index=out.index, dtype=object)
    return out


def _holm_by_family(tests: Mapping[tuple, float]) -> dict[tuple, float | None]:
    """Holm within each (metric, variant, cutoff) family, as :func:`genderbias.stats.significance.against_baseline` does."""
    families: dict[tuple, list[tuple[tuple, float]]] = {}
    for key, p in tests.items():
        families.setdefault(key[1:], []).append((key, p))
    adjusted: dict[tuple, float | None] = {}
    for members in families.values():
        for (key, _), q in zip(members, holm([p for _, p in members]), strict=True):
            adjusted[key] = q
    return adjusted


def _finite(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if np.isnan(value) else value


def contributions(
    run_values: pd.Series,
    baseline_values: pd.Series,
    probabilities: pd.DataFrame,
    in_set: set[str] | frozenset[str],
) -> tuple[float | None, pd.DataFrame]:
    """Which queries move a paired difference, and how uncertain their labels are, for the
    estimator a report on a batch's labels uses: the label-corrected mean difference D
    (:func:`class_means` of d_q = run − baseline over every judged query with both values).

    Settling query q (a ruling makes its label certain) replaces its row of P by label c's with
    probability π_qc; refitting gives D'(q, c). ``expected_shift`` = Σ_c π_qc·|D'(q, c) − D|: where
    an adjudication moves the result most, in expectation. ``if_non_gendered`` = D'(q, n) − D and
    ``if_gendered`` = the expected D' − D given q is not non-gendered. One K×K solve per query
    and label, all at once.

    Returns ``(D, table)``; the table's columns are ``qid, difference, probability`` (π_n),
    ``in_set, if_non_gendered, if_gendered, expected_shift``, sorted by expected shift
    (queries without a paired value or probabilities left out).
    """
    joined = pd.concat([run_values.rename("a"), baseline_values.rename("b")], axis=1, join="inner").dropna()
    joined.index = joined.index.astype(str)
    probabilities = probabilities.copy()
    probabilities.index = probabilities.index.astype(str)
    qids = [q for q in joined.index if q in probabilities.index]
    columns = ["qid", "difference", "probability", "in_set", "if_non_gendered", "if_gendered", "expected_shift"]
    if not qids:
        return None, pd.DataFrame(columns=columns)
    pi = probabilities.loc[qids].astype(float)
    labels = list(pi.columns)
    n_label = labels.index(NON_GENDERED)
    d = (joined.loc[qids, "a"] - joined.loc[qids, "b"]).to_numpy(dtype=np.float64)
    t, weighted = label_map(pi)
    pis = pi.to_numpy()
    if weighted:
        x, w = np.ones((len(qids), 1)), pis @ t[:, 0]
        settled_x = np.ones((len(labels), 1))
        settled_w = t[:, 0]  # 1 for n, 0 otherwise
    else:
        x, w = pis @ t, np.ones(len(qids))
        settled_x, settled_w = t, np.ones(len(labels))  # one-hot label c → row c of T
    gram = np.einsum("q,qi,qj->ij", w, x, x)
    moment = np.einsum("q,qi,q->i", w, x, d)
    beta = np.linalg.solve(gram, moment) if np.linalg.cond(gram) < MAX_CONDITION else np.full(len(gram), np.nan)
    # Every (query, label): remove the query's row, add the settled one, solve. [Q × L × K × K]
    own = w[:, None, None] * np.einsum("qi,qj->qij", x, x)
    new = settled_w[:, None, None] * np.einsum("ci,cj->cij", settled_x, settled_x)
    grams = gram[None, None] - own[:, None] + new[None, :]
    moments = (
        moment[None, None]
        - (w * d)[:, None, None] * x[:, None, :]
        + (settled_w[:, None] * settled_x)[None] * d[:, None, None]
    )
    solvable = np.linalg.cond(grams) < MAX_CONDITION
    settled = np.full(grams.shape[:2], np.nan)
    if solvable.any():
        settled[solvable] = np.linalg.solve(grams[solvable], moments[solvable][..., None])[..., 0, 0]
    change = settled - beta[0]
    gendered = 1.0 - pis[:, n_label]
    others = np.delete(np.arange(len(labels)), n_label)
    with np.errstate(invalid="ignore", divide="ignore"):
        if_gendered = np.where(gendered > 0, np.nansum(pis[:, others] * change[:, others], axis=1) / gendered, np.nan)
    table = pd.DataFrame(
        {
            "qid": qids,
            "difference": d,
            "probability": pis[:, n_label],
            "in_set": [q in in_set for q in qids],
            "if_non_gendered": change[:, n_label],
            "if_gendered": if_gendered,
            "expected_shift": np.nansum(pis * np.abs(change), axis=1),
        },
        columns=columns,
    )
    table = table.sort_values(["expected_shift", "qid"], ascending=[False, True], kind="stable").reset_index(drop=True)
    return (None if np.isnan(beta[0]) else float(beta[0])), table


#: Columns of :func:`dependence_table`.
DEPENDENCE_COLUMNS = [
    "run",
    "metric",
    "variant",
    "cutoff",
    "dependence",
    "difference_corrected",
    "difference_combined_low",
    "difference_combined_high",
    "shift",
    "significant",
]


def tilted(probabilities: pd.DataFrame, z: np.ndarray, dependence: float) -> pd.DataFrame:
    """The label probabilities if labelling errors depend on the rankings by ``dependence``: each
    query's odds of *not* having its most likely label multiplied by exp(dependence · z_q), the
    other labels keeping their proportions. ``z`` [N]: the baseline's standardised value per row
    (0 where it has none). A certain row (a ruling, gold) stays certain. This is *not* the
    definition of D (``benchmarks/crowd_simulation.py``, ``Crowd.dependence``: every answer's error
    odds × exp(D·z)); acting on the posterior, it understates the move of the corrected difference
    on crowds that err that way and has the opposite sign on crowds that do not
    (``tests/metrics/test_label_dependence_simulated.py``, docs/metrics.md)."""
    pi = probabilities.to_numpy(dtype=np.float64)
    top = pi.argmax(axis=1)
    rows = np.arange(len(pi))
    p_top = pi[rows, top]
    with np.errstate(divide="ignore", invalid="ignore"):
        wrong_odds = (1.0 - p_top) / p_top * np.exp(dependence * np.asarray(z, dtype=np.float64))
        new_top = 1.0 / (1.0 + wrong_odds)
        scale = np.where(p_top < 1.0, (1.0 - new_top) / (1.0 - p_top), 0.0)
    out = pi * scale[:, None]
    out[rows, top] = np.where(p_top < 1.0, new_top, 1.0)
    return pd.DataFrame(out, index=probabilities.index, columns=probabilities.columns)


def standardised(values: np.ndarray) -> np.ndarray:
    """(v − mean)/s.d. over the finite values (population s.d., as the simulation's z); 0 where a
    value is missing or every value is equal."""
    values = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(values)
    if finite.sum() < 2 or np.nanstd(values) == 0:
        return np.zeros(len(values))
    return np.where(finite, (values - np.nanmean(values)) / np.nanstd(values), 0.0)


def dependence_table(
    wide: Mapping[str, pd.DataFrame],
    probabilities: pd.DataFrame,
    combined: pd.DataFrame,
    baseline: str,
    dependences: list[float],
    simulate: Callable[[np.ndarray, np.ndarray, float], np.ndarray] | None = None,
) -> pd.DataFrame:
    """How far each label-corrected paired difference (run − ``baseline``) and its combined interval
    move if labelling errors depend on the rankings by each of ``dependences``
    (:data:`DEPENDENCE_COLUMNS`).

    A sensitivity check, not an estimate: the correction assumes errors that do not depend on the
    rankings given the true label, and no model fitted on the batch can test that. Here the label
    probabilities are tilted (:func:`tilted`, z = the baseline's standardised value of that
    metric, variant and cutoff) and the corrected difference refitted: ``shift`` = its value
    tilted by D minus its value tilted by 0, so D = 0 gives the report's figure exactly. The
    interval is the report's combined interval moved by ``shift`` (its width is what the labels
    and the queries contribute, which the tilt does not change to first order); ``significant``:
    the moved interval excludes 0. D > 0: labels are less trustworthy where the baseline's value
    is high (D < 0: where it is low). Measured against simulated crowds with a known D, the tilt
    is not the move of the corrected difference (a sixth of it at D = 1 on a crowd that erred so,
    the opposite sign on one that did not: ``tests/metrics/test_label_dependence_simulated.py``);
    with ``simulate`` (below) the shift is computed as D is defined.

    ``simulate``: the shift as D is defined, ``(z [N], differences [N × runs], D) → shifts [runs]``
    (:func:`simulated_shift` on the batch's answers and fitted crowd, what the service passes); without
    it, the posterior tilt above (what a table of probabilities alone allows).

    ``wide`` and ``probabilities`` as :func:`combined_summary` takes them; ``combined``: its output
    (the rows against ``baseline`` are read).
    """
    qids = list(probabilities.index.astype(str))
    t, weighted = label_map(probabilities)
    columns = sorted({key for table in wide.values() for key in table.columns})
    base = wide[baseline].reindex(index=qids, columns=columns).to_numpy(dtype=np.float64)
    indexed = combined.set_index(["run", "metric", "variant", "cutoff"])
    others = [run for run in wide if run != baseline]
    differences = {
        run: wide[run].reindex(index=qids, columns=columns).to_numpy(dtype=np.float64) - base for run in others
    }
    shifts: dict[tuple[int, float], dict[str, float]] = {}
    for j, key in enumerate(columns):
        if not any((run, key[0], key[1], int(key[2])) in indexed.index for run in others):
            continue
        z = standardised(base[:, j])
        matrix = np.column_stack([differences[run][:, j] for run in others]) if others else np.zeros((len(qids), 0))
        for d in dependences:
            if simulate is not None:
                moved = np.asarray(simulate(z, matrix, float(d)), dtype=np.float64)
                shifts[j, float(d)] = dict(zip(others, moved.tolist(), strict=True))
            else:
                shifts[j, float(d)] = {
                    run: _tilted_mean(probabilities, z, float(d), matrix[:, i], t, weighted)
                    - _tilted_mean(probabilities, z, 0.0, matrix[:, i], t, weighted)
                    for i, run in enumerate(others)
                }
    rows = []
    for run in others:
        for j, key in enumerate(columns):
            label = (run, key[0], key[1], int(key[2]))
            if label not in indexed.index:
                continue
            report = indexed.loc[label]
            for d in dependences:
                shift = shifts[j, float(d)][run]
                point, low, high = (
                    _finite(report.get(c)) for c in
                    ("difference_corrected", "difference_combined_low", "difference_combined_high")
                )  # fmt: skip
                moved = [None if x is None else x + shift for x in (point, low, high)]
                rows.append(
                    {
                        "run": run, "metric": key[0], "variant": key[1], "cutoff": int(key[2]),
                        "dependence": float(d), "difference_corrected": moved[0],
                        "difference_combined_low": moved[1], "difference_combined_high": moved[2],
                        "shift": shift,
                        "significant": None if moved[1] is None or moved[2] is None
                        else bool(moved[1] > 0 or moved[2] < 0),
                    }
                )  # fmt: skip
    return pd.DataFrame(rows, columns=DEPENDENCE_COLUMNS)


def _tilted_mean(
    probabilities: pd.DataFrame, z: np.ndarray, dependence: float, values: np.ndarray, t: np.ndarray, weighted: bool
) -> float:
    """The corrected mean of ``values`` with the probabilities :func:`tilted` by ``dependence``, in the
    columns ``t`` of the untilted :func:`label_map` (which labels get a mean of their own stays put)."""
    pi = tilted(probabilities, z, dependence).to_numpy(dtype=np.float64)
    p, w = (np.ones((len(pi), 1)), pi @ t[:, 0]) if weighted else (pi @ t, None)
    return float(class_means(p, values, row_weights=w)[0, 0])


#: The dependence check refits the batch's crowd as erring with D (:func:`dependent_fit`) with class
#: shares of their own in bands of the baseline's standardised value z, of equal counts: at most this
#: many bands, and at least :data:`MIN_BAND_QUERIES` queries in each.
DEPENDENCE_BANDS = 10
MIN_BAND_QUERIES = 50
#: Class shares of a band: half a query per label on top of its queries' probabilities (the crowd model's).
BAND_SHARE_PRIOR = 0.5
#: A worker's row for a true label: its odds of a wrong answer (at z = 0) with these pseudo-answers, right
#: and wrong, and its wrong answers' proportions with this many per cell.
ROW_PRIOR_RIGHT, ROW_PRIOR_WRONG, PATTERN_PSEUDO = 2.0, 1.0, 1.0
#: EM of :func:`dependent_fit` stops when no query's probability moves by more than this, or after the
#: iterations; each M-step takes this many Newton steps on the rows' log odds.
DEPENDENT_TOLERANCE = 1e-6
DEPENDENT_ITERATIONS = 200
NEWTON_STEPS = 5


def _answer_rates(answers: pd.DataFrame, confusion: Mapping[str, pd.DataFrame], labels: list) -> np.ndarray:
    """[answers × true label × answer]: each answer's worker's fitted row."""
    matrices = {w: c.reindex(index=labels, columns=labels).to_numpy(dtype=np.float64) for w, c in confusion.items()}
    return np.stack([matrices[w] for w in answers["worker"].astype(str)])


def _tilted_rates(rates: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """[answers × true label × answer]: each row with its odds of a wrong answer × ``factor`` (per
    answer), the wrong answers keeping their proportions (D's definition, ``Crowd.dependence``)."""
    k = rates.shape[-1]
    diagonal = np.eye(k, dtype=bool)
    right = np.clip(rates[:, diagonal], 1e-12, 1 - 1e-12)  # answers × true label
    wrong = np.where(diagonal, 0.0, rates)
    wrong /= np.maximum(wrong.sum(axis=2, keepdims=True), 1e-300)
    p_right = 1.0 / (1.0 + (1.0 - right) / right * np.asarray(factor, dtype=np.float64)[:, None])
    return np.where(diagonal, p_right[:, :, None], (1.0 - p_right)[:, :, None] * wrong)


def dependent_fit(
    answers: pd.DataFrame,
    gold: Mapping[str, str],
    probabilities: pd.DataFrame,
    z: np.ndarray,
    dependence: float,
    fitted: list[str] | None = None,
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """The batch's crowd refitted as erring with dependence ``dependence`` (D's definition,
    ``Crowd.dependence``: every answer's odds of being wrong × exp(D·z_q)): ``(label probabilities,
    each worker's untilted row)`` — the probabilities of the queries in ``fitted`` (default: every row
    of ``probabilities`` with an answer) re-estimated, the other rows as they are; the rows (true label
    × answer) those a crowd erring with D has at z = 0.

    Dawid–Skene EM with each answer's error odds × exp(D·z_q) in the model: a worker's row for true label
    t is its odds of a wrong answer o_wt (MAP, :data:`ROW_PRIOR_RIGHT` and :data:`ROW_PRIOR_WRONG`
    pseudo-answers at z = 0, Newton steps on log o_wt) and the proportions of its wrong answers
    (:data:`PATTERN_PSEUDO` per cell, untilted); the class shares are estimated in each band of z
    (:data:`DEPENDENCE_BANDS` of equal counts, at least :data:`MIN_BAND_QUERIES` queries each, with
    :data:`BAND_SHARE_PRIOR`). Gold questions (``gold``) keep their label and are not tilted; the other
    rows of ``probabilities`` (rulings, machine-accepted labels) keep theirs and their answers are read
    with the tilt; answers on other items are ignored. Starts from ``probabilities``.

    Why the bands and the refit (docs/quality.md, item 5): the labels' shares move with the rankings'
    values, and where errors grow with z the answers on the high-z queries say little; the batch's own
    posteriors read them as the crowd said, and a truth drawn from them already carries the dependent
    errors; the rows fitted as if the crowd erred independently are an average over z."""
    labels = list(probabilities.columns)
    k = len(labels)
    qids = list(probabilities.index.astype(str))
    gold = {str(item): str(label) for item, label in gold.items()}
    gold_items = sorted(set(gold) - set(qids))
    item_row = {q: i for i, q in enumerate(qids + gold_items)}
    items = answers["item"].astype(str).map(item_row)
    keep = items.notna().to_numpy()
    frame = answers.loc[keep]
    rows = items[keep].to_numpy(dtype=np.int64)
    if not len(frame):
        return probabilities.copy(), {}
    position = {label: i for i, label in enumerate(labels)}
    given = frame["label"].astype(str).map(position).to_numpy(dtype=np.int64)
    workers, worker = np.unique(frame["worker"].astype(str).to_numpy(), return_inverse=True)
    z = np.asarray(z, dtype=np.float64)
    is_query = rows < len(qids)
    factor = np.where(is_query, np.exp(dependence * z[np.minimum(rows, len(qids) - 1)]), 1.0)
    posteriors = np.vstack(
        [probabilities.to_numpy(dtype=np.float64), np.eye(k)[[position[gold[g]] for g in gold_items]].reshape(-1, k)]
    )
    chosen = set(qids if fitted is None else map(str, fitted))
    free = np.array([q in chosen for q in qids] + [False] * len(gold_items)) & np.isin(np.arange(len(posteriors)), rows)
    targets = np.flatnonzero(free)
    bands = max(1, min(DEPENDENCE_BANDS, len(targets) // MIN_BAND_QUERIES))
    band = np.empty(len(targets), dtype=np.int64)
    band[np.argsort(z[targets], kind="stable")] = np.arange(len(targets)) * bands // max(len(targets), 1)
    right = (given[:, None] == np.arange(k)[None, :]).astype(np.float64)  # answers × true label
    log_odds = np.zeros((len(workers), k))
    every = np.arange(len(frame))
    counted = free[rows]  # the answers on the queries being estimated, and their rows among them
    local = np.searchsorted(targets, rows[counted])
    for _ in range(DEPENDENT_ITERATIONS):
        weight = posteriors[rows]  # answers × true label
        shares = np.full((bands, k), BAND_SHARE_PRIOR)
        np.add.at(shares, band, posteriors[targets])
        shares /= shares.sum(axis=1, keepdims=True)
        wrong = np.full((len(workers), k, k), PATTERN_PSEUDO)
        np.add.at(wrong, (worker, slice(None), given), weight * (1.0 - right))
        wrong[:, np.eye(k, dtype=bool)] = 0.0
        wrong /= wrong.sum(axis=2, keepdims=True)
        for _ in range(NEWTON_STEPS):
            odds = np.exp(log_odds)
            p_wrong = odds[worker] * factor[:, None] / (1.0 + odds[worker] * factor[:, None])
            prior_wrong = odds / (1.0 + odds)
            score = ROW_PRIOR_WRONG - (ROW_PRIOR_RIGHT + ROW_PRIOR_WRONG) * prior_wrong
            curvature = (ROW_PRIOR_RIGHT + ROW_PRIOR_WRONG) * prior_wrong * (1.0 - prior_wrong)
            np.add.at(score, worker, weight * ((1.0 - right) - p_wrong))
            np.add.at(curvature, worker, weight * p_wrong * (1.0 - p_wrong))
            log_odds += np.clip(score / curvature, -3.0, 3.0)
        p_right = 1.0 / (1.0 + np.exp(log_odds)[worker] * factor[:, None])  # answers × true label
        rate = np.where(right > 0, p_right, (1.0 - p_right) * wrong[worker, :, given][every])
        log_lik = np.zeros((len(targets), k))
        np.add.at(log_lik, local, np.log(np.maximum(rate[counted], 1e-300)))
        log_post = log_lik + np.log(shares[band])
        new = np.exp(log_post - log_post.max(axis=1, keepdims=True))
        new /= new.sum(axis=1, keepdims=True)
        moved = np.abs(new - posteriors[targets]).max() if len(targets) else 0.0
        posteriors[targets] = new
        if moved <= DEPENDENT_TOLERANCE:
            break
    accuracy = 1.0 / (1.0 + np.exp(log_odds))  # workers × true label
    confusion = {
        str(w): pd.DataFrame(
            (1.0 - accuracy[i])[:, None] * wrong[i] + np.diag(accuracy[i]), index=labels, columns=labels
        )
        for i, w in enumerate(workers)
    }
    return pd.DataFrame(posteriors[: len(qids)], index=probabilities.index, columns=labels), confusion


def simulated_shift(
    answers: pd.DataFrame,
    gold: Mapping[str, str],
    confusion: Mapping[str, pd.DataFrame],
    probabilities: pd.DataFrame,
    z: np.ndarray,
    values: np.ndarray,
    dependence: float,
    refit: Callable[[pd.DataFrame], pd.DataFrame],
    draws: int = 4,
    seed: int = DEFAULT_SEED,
    fitted: list[str] | None = None,
) -> tuple[float | np.ndarray, float | np.ndarray]:
    """How far the truth would sit from the label-corrected mean of ``values`` if the batch's crowd
    erred with dependence ``dependence`` (D's definition, ``Crowd.dependence`` in
    ``benchmarks/crowd_simulation.py``: every answer's odds of being wrong × exp(D·z)):
    ``(shift, its Monte-Carlo standard error)``, ``shift`` = mean over ``draws`` replicate batches of
    (corrected mean when the crowd errs independently − corrected mean when it errs with D), the
    replicates paired (same true labels, same uniforms).

    A parametric simulation from the batch's crowd refitted as erring with D (:func:`dependent_fit`, with
    ``gold`` and ``fitted``): each replicate draws the true label of every query in ``fitted`` (default:
    every row with an answer) from that refit's probabilities, the other rows from ``probabilities``
    (rows: the queries, in the order of ``z`` and ``values``; rulings and machine-accepted rows are
    certain), and answers each of the batch's own (item, worker) pairs in ``answers`` (``item, worker,
    label``; the items of ``gold``, gold question → its known label, are answered untilted from that
    label) from the worker's row of that refit (true label × answer; ``confusion[worker]``, the batch's
    fit, for a worker it does not cover) as it is and with its error odds × exp(D·z_q), the wrong answers
    keeping their proportions; ``refit`` (the batch's crowd model: answers → probabilities over the same
    items and labels) is run on each, and the corrected mean taken with the batch's columns
    (:func:`label_map`). D = 0 gives 0 exactly. ``values`` ``[N]`` gives floats; ``[N × C]`` (several
    runs' differences; NaN where a query has no value) arrays ``[C]``, every column from the same
    replicates.

    Measured against simulated studies whose crowd erred with a known D
    (tests/metrics/test_label_dependence_simulated.py): the truth's sign and about 0.7 of its size (about
    half with 35% spammers).
    """
    matrix = np.asarray(values, dtype=np.float64)
    single = matrix.ndim == 1
    matrix = matrix[:, None] if single else matrix
    if dependence == 0:
        zero = np.zeros(matrix.shape[1])
        return (0.0, 0.0) if single else (zero, zero.copy())
    labels = list(probabilities.columns)
    position = {label: i for i, label in enumerate(labels)}
    row_of = {q: i for i, q in enumerate(probabilities.index.astype(str))}
    items = answers["item"].astype(str).map(row_of)
    is_query = items.notna().to_numpy()
    rows = items.fillna(0).to_numpy(dtype=np.int64)
    gold_truth = answers["item"].astype(str).map(gold).map(position).fillna(0).to_numpy(dtype=np.int64)
    z = np.asarray(z, dtype=np.float64)
    reading, rows_at_d = dependent_fit(answers, gold, probabilities, z, dependence, fitted)
    pi = reading.to_numpy(dtype=np.float64)
    rates = _answer_rates(answers, {**confusion, **rows_at_d}, labels)  # answers × true label × answer
    t, weighted = label_map(probabilities)
    every = np.arange(len(answers))
    answer_rates = {
        tilt: _tilted_rates(rates, np.where(is_query, np.exp(d * z[rows]), 1.0))
        for tilt, d in ((False, 0.0), (True, dependence))
    }
    rng = np.random.default_rng(seed)
    shifts = []
    for _ in range(draws):
        truth = (rng.random(len(pi))[:, None] > np.cumsum(pi, axis=1)[:, :-1]).sum(axis=1)
        true_label = np.where(is_query, truth[rows], gold_truth)
        uniforms = rng.random(len(answers))[:, None]
        corrected = []
        for tilt in (False, True):
            chances = answer_rates[tilt][every, true_label]
            given = (uniforms > np.cumsum(chances, axis=1)[:, :-1]).sum(axis=1)
            refitted = refit(answers.assign(label=[labels[i] for i in given]))
            fitted_pi = refitted.reindex(index=probabilities.index, columns=labels).to_numpy(dtype=np.float64)
            p, w = (np.ones((len(fitted_pi), 1)), fitted_pi @ t[:, 0]) if weighted else (fitted_pi @ t, None)
            corrected.append(class_means(p, matrix, row_weights=w)[0])
        shifts.append(corrected[0] - corrected[1])
    shifts = np.asarray(shifts)  # draws × C
    mean = shifts.mean(axis=0)
    se = shifts.std(axis=0, ddof=1) / np.sqrt(len(shifts)) if len(shifts) > 1 else np.full(len(mean), np.nan)
    return (float(mean[0]), float(se[0])) if single else (mean, se)

"""Label uncertainty in a bias figure: the runs' means on the *truly* non-gendered queries, estimated
from every query's label probabilities, with an interval carrying both the labels' uncertainty and
the sampling of the queries.

What each query's label probabilities π_q are, the estimator (the least-squares class means of
:mod:`.class_means`, β_n the *corrected* value), the **combined interval** (queries resampled, β and the crowd
model refitted per draw, by :data:`genderbias.stats.intervals.LABEL_INTERVAL`), the labels' share of its width
and the test (the bootstrap p that inverts it, Holm-adjusted): docs/metrics.md, "The set and the values" and
after. All runs share the draws, so paired differences are coherent; with fewer than :data:`MIN_USABLE_DRAWS` of
the draws usable the interval is undefined.

Coverage, as simulated: docs/metrics.md, "Coverage, as simulated" (simulations' figures, so the methods
text states the crowd model's check instead). Errors that depend on the rankers' output are outside what
any label model corrects; :func:`.label_dependence.dependence_table` is the researcher's sensitivity check.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from genderbias.crowd import resampling
from genderbias.crowd.class_means import class_means, design, design_draws
from genderbias.crowd.label_probabilities import LabelModel
from genderbias.ranking.defaults import DEFAULT_SAMPLES, DEFAULT_SEED, LABEL_UNCERTAINTY_COLUMNS, LEVEL
from genderbias.stats import intervals
from genderbias.stats.significance import ALPHA, bootstrap_ci, holm, resampling_weights

__all__ = [
    "COMBINED_POLICY", "FITTING", "MIN_USABLE_DRAWS", "REFITTING", "RESAMPLING", "CorrectedFit", "combined_summary",
    "label_share", "policy_text",
]  # fmt: skip

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
    """The combined test's policy in one sentence for captions (``interval``: the construction in words)."""
    if baseline is None:
        return "No baseline: no significance tests. Intervals: queries and labels (label-corrected means)."
    return (
        f"p: {COMBINED_POLICY['test']}, against {baseline}; family: {COMBINED_POLICY['family']}; "
        f"{COMBINED_POLICY['correction']}-adjusted; * p < {ALPHA} (the combined interval, a "
        f"{interval or COMBINED_POLICY['interval']}, excludes 0)."
    )


class CorrectedFit:
    """The label-corrected mean's point estimate and bootstrap (and jackknife) replicates for any value
    columns, all sharing one set of draws: the crowd model is refitted once per draw, not per column.

    ``labels``: its table gives the point estimate, its ``draws`` the probabilities per draw.
    ``jackknife``: also refit on :func:`genderbias.stats.intervals.jackknife_weights` (default: when
    :data:`genderbias.stats.intervals.LABEL_INTERVAL` needs it). The leave-out draws (workers'
    variance) and the recalibrated table (calibration bias) are read lazily, once.
    """

    def __init__(
        self,
        labels: LabelModel,
        samples: int = DEFAULT_SAMPLES,
        seed: int = DEFAULT_SEED,
        jackknife: bool | None = None,
        progress: resampling.RefitProgress | None = None,
    ) -> None:
        probabilities = labels.table
        self.labels, self.seed, self._p_left_out, self._calibrated = labels, seed, {}, None
        self.p, self.column, self.row_weights = design(probabilities)
        self.probabilities, self.shape = probabilities, probabilities.shape
        n = len(probabilities)
        self.weights = resampling_weights(n, samples, seed)
        self.p_draws, self.row_weight_draws = design_draws(
            probabilities, labels.draws(self.weights, seed, progress=progress)
        )
        if jackknife is None:
            jackknife = intervals.needs_jackknife(self.construction())
        self.jack_weights = intervals.jackknife_weights(n) if jackknife else None
        self.p_jack, self.row_weight_jack = self.p, self.row_weights
        if jackknife:
            # The gold answers (no row of the table) are kept once each: a jackknife leaves out, it does not resample.
            self.p_jack, self.row_weight_jack = design_draws(
                probabilities, labels.draws(self.jack_weights, seed, resample_others=False)
            )

    def construction(self, rule: str = intervals.LABEL_INTERVAL) -> str:
        """The construction ``rule`` takes for these labels: by whether their crowd model is trusted
        (:meth:`.label_probabilities.LabelModel.trusted`)."""
        return intervals.construction_for(rule, trusted=self.labels.trusted())

    def estimates(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(point [C], bootstrap draws [B × C], jackknife [G × C] or None)`` of ``values`` ``[N × C]``."""
        point = class_means(self.p, values, row_weights=self.row_weights)[self.column]
        fitted = class_means(self.p_draws, values, self.weights, self.row_weight_draws)[:, self.column, :]
        jack = None
        if self.jack_weights is not None:
            jack = class_means(self.p_jack, values, self.jack_weights, self.row_weight_jack)[:, self.column, :]
        return point, fitted, jack

    def left_out_values(self, values: np.ndarray, by: str) -> np.ndarray:
        """``[G × C]``: the corrected means of ``values`` ``[N × C]`` with the crowd model refitted without
        each jackknife group of workers or answers (``by``); ``[0 × C]`` without a crowd model."""
        values = _columns(values)
        if by not in self._p_left_out:
            raw = self.labels.leave_out_draws(by)
            self._p_left_out[by] = design_draws(self.probabilities, raw) if len(raw) else None
        if self._p_left_out[by] is None:
            return np.empty((0, values.shape[1]))
        p, row_weights = self._p_left_out[by]
        return class_means(p, values, np.ones(p.shape[:2]), row_weights)[:, self.column, :]

    def extra_variance(self, values: np.ndarray, construction: str | None = None) -> np.ndarray | None:
        """``[C]``: the variance a ``crossed`` ``construction`` (default: :meth:`construction`) adds to the
        bootstrap's; None for the others."""
        construction = construction or self.construction()
        if not intervals.needs_workers(construction):
            return None
        return intervals.extra_variance(construction, lambda by: self.left_out_values(values, by))

    def calibration_bias(self, values: np.ndarray) -> np.ndarray | None:
        """``[C]``: the corrected mean with the probabilities as given − with the recalibrated ones: the bias
        from posteriors surer than the crowd model is right to be. None without a crowd model or when its
        check passes."""
        if self._calibrated is None:
            table = self.labels.recalibrated(self.seed)
            self._calibrated = () if table is None else design_draws(
                self.probabilities, table.reindex(index=self.probabilities.index, columns=self.probabilities.columns)
                .to_numpy(dtype=np.float64)[None]
            )  # fmt: skip
        if not self._calibrated:
            return None
        values = _columns(values)
        p, row_weights = self._calibrated
        calibrated = class_means(p, values, np.ones(p.shape[:2]), row_weights)[0, self.column, :]
        given = class_means(self.p, values, row_weights=self.row_weights)[self.column]
        return given - calibrated

    def reach(self, values: np.ndarray, point: np.ndarray, fitted: np.ndarray) -> np.ndarray | None:
        """``[C]``: how far the interval reaches beyond the bootstrap's where the crowd model's check warns
        (None where it passes): :meth:`calibration_bias` plus twice the draws' drift over ``point`` (the
        percentile-to-basic distance). Why only then: docs/metrics.md "Interval constructions compared",
        docs/quality.md "Too sure, and by how much"."""
        bias = self.calibration_bias(values)
        if bias is None:
            return None
        usable = np.isfinite(fitted).sum(axis=0)
        means = np.where(usable > 0, np.nansum(fitted, axis=0) / np.maximum(usable, 1), np.nan)  # no all-NaN warning
        drift = means - np.asarray(point, dtype=np.float64)
        return bias + 2 * np.nan_to_num(drift)

    def interval(
        self, values: np.ndarray, level: float = LEVEL, construction: str | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(point, low, high, p)``: the ``construction`` interval (default: :meth:`construction`) and the
        two-sided p that inverts it (NaN below :data:`MIN_USABLE_DRAWS`). Where :meth:`reach` applies, the
        interval is joined with itself moved by that much and p is the larger of the two."""
        construction = construction or self.construction()
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
    labels: LabelModel,
    in_set: set[str] | frozenset[str],
    summary: pd.DataFrame,
    baseline: str | None = None,
    samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = LEVEL,
    progress: Callable[[str, int, int], None] | None = None,
) -> pd.DataFrame:
    """``summary`` (:func:`genderbias.stats.significance.summarise` over S) with
    :data:`genderbias.ranking.defaults.LABEL_UNCERTAINTY_COLUMNS` added and ``p_value`` the combined test's
    Holm-adjusted p (the t-test's kept as ``query_p_value``).

    ``wide``: per run, judged queries × ``(metric, variant, cutoff)`` values (NaN = none); ``labels``: the
    fitted label model, refitted in every draw so its estimation error enters every interval.
    ``progress``: told ``(step, done, total)`` (:data:`REFITTING`, then :data:`FITTING` per fit).
    """
    say = progress or (lambda step, done, total: None)
    qids = list(labels.table.index.astype(str))
    if labels.crowd is not None:
        say(REFITTING, 0, samples)
        fitter = CorrectedFit(labels, samples, seed, progress=lambda done, total: say(REFITTING, done, total))
    else:
        say(RESAMPLING, 0, 1)
        fitter = CorrectedFit(labels, samples, seed)
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


def _columns(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    return values[:, None] if values.ndim == 1 else values


def _finite(value) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if np.isnan(value) else value

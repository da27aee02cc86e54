"""Uncertainty of a model's mean: bootstrap confidence intervals (percentile, queries resampled with multinomial
weights shared by all metrics of a run), and the project's one significance policy (:data:`POLICY`; why each
choice: docs/metrics.md, "The significance policy"): a two-sided paired t-test against the baseline, the family
every run against it on one metric, variant and cutoff, Holm-adjusted, made by :func:`against_baseline` wherever
a p-value is shown.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd
from scipy import stats

from genderbias.ranking.defaults import DEFAULT_SAMPLES, DEFAULT_SEED, LEVEL

__all__ = [
    "ALPHA", "CORRELATION_POLICY", "against_baseline", "bootstrap_ci", "finite", "holm", "json_safe", "paired_t_test",
    "policy", "policy_text", "resampling_weights", "run_mean", "summarise", "wide_values",
]  # fmt: skip

#: p below this is marked ``*`` (comparisons) or ``†`` (correlations).
ALPHA = 0.05

#: The significance policy, as every table states it (page caption, command footnote, API/CSV field).
POLICY = {
    "test": "two-sided paired t-test over the queries both runs have a value for",
    "family": "every run against the baseline for one metric, variant and cutoff",
    "correction": "Holm",
    "alpha": ALPHA,
}
#: The correlations' policy (the papers' tables).
CORRELATION_POLICY = {
    "test": "Pearson's r and Kendall's tau-b, two-sided, over the queries with both values",
    "family": "one statistic of one pair of metrics across the runs",
    "correction": "Holm",
    "alpha": ALPHA,
}


def resampling_weights(n: int, samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED) -> np.ndarray:
    """``[samples × n]`` multinomial weights, the one way the project resamples queries (the report's intervals,
    :mod:`genderbias.crowd.label_uncertainty`). Read-only and cached, so every run and paired difference of a
    report reuses the same draw."""
    return _resampling_weights(n, samples, seed)


@functools.lru_cache(maxsize=1)
def _resampling_weights(n: int, samples: int, seed: int) -> np.ndarray:
    if n == 0:
        weights = np.zeros((samples, 0))
    else:
        rng = np.random.default_rng(seed)
        weights = rng.multinomial(n, np.full(n, 1.0 / n), size=samples).astype(np.float64)
    weights.setflags(write=False)
    return weights


def bootstrap_means(values: np.ndarray, samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED) -> np.ndarray:
    """``[samples × columns]`` means of resampled rows of ``values`` (``[queries × columns]``), NaN cells excluded."""
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    weights = resampling_weights(values.shape[0], samples, seed)
    present = ~np.isnan(values)
    sums = weights @ np.where(present, values, 0.0)
    counts = weights @ present.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / counts


def bootstrap_ci(
    values: np.ndarray, samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED, level: float = LEVEL
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap CI of the mean of every column: ``(low, high)`` arrays."""
    import warnings

    means = bootstrap_means(values, samples, seed)
    alpha = (1.0 - level) / 2.0
    with warnings.catch_warnings():  # a column without any value (all undefined) has no interval: NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        low = np.nanquantile(means, alpha, axis=0)
        high = np.nanquantile(means, 1.0 - alpha, axis=0)
    return low, high


def paired_t_test(values: pd.Series, baseline: pd.Series) -> tuple[float | None, int]:
    """Two-sided paired t-test over the queries (index) both series have: ``(p, common)``. When every difference
    is the same, p is ``None`` if it is 0 and ``0.0`` if not (t = ±∞, where scipy's ttest_rel gives NaN)."""
    joined = pd.concat([values.rename("a"), baseline.rename("b")], axis=1, join="inner").dropna()
    common = len(joined)
    if common < 2:
        return None, common
    difference = joined["a"] - joined["b"]
    if np.allclose(difference.to_numpy(), difference.iloc[0], rtol=0.0, atol=1e-15):
        return (None if abs(difference.iloc[0]) <= 1e-15 else 0.0), common
    result = stats.ttest_rel(joined["a"].to_numpy(), joined["b"].to_numpy())
    p = float(result.pvalue)
    return (None if np.isnan(p) else p), common


def holm(p_values: list[float | None]) -> list[float | None]:
    """Holm-adjusted p-values in the given order (``None``/NaN aside, not counted): with the m defined ones sorted,
    adjusted p_(i) = max over j ≤ i of min(1, (m − j + 1) · p_(j))."""
    kept = [None if p is None or np.isnan(p) else float(p) for p in p_values]
    defined = sorted((p, i) for i, p in enumerate(kept) if p is not None)
    m = len(defined)
    adjusted: list[float | None] = [None] * len(kept)
    running = 0.0
    for j, (p, i) in enumerate(defined):
        running = max(running, min(1.0, (m - j) * p))
        adjusted[i] = running
    return adjusted


def policy(baseline: str | None) -> dict | None:
    """The significance policy of comparisons against ``baseline`` (None without one), as the API,
    the CSV and the tables state it."""
    return None if baseline is None else {**POLICY, "baseline": baseline}


def policy_text(baseline: str | None) -> str:
    """The policy in one sentence, for captions and the command's footnotes."""
    if baseline is None:
        return "No baseline: no significance tests."
    return (
        f"p: {POLICY['test']}, against {baseline}; family: {POLICY['family']}; "
        f"{POLICY['correction']}-adjusted; * p < {ALPHA}."
    )


KEYS = ["metric", "variant", "cutoff"]


def against_baseline(wide: dict[str, pd.DataFrame], baseline: str) -> dict[tuple, tuple[float | None, float | None]]:
    """``{(run, metric, variant, cutoff): (p_raw, p_adjusted)}`` against ``baseline`` under :data:`POLICY` for
    every other run and column both have; ``wide``: per run, queries × columns (NaN: no value)."""
    if baseline not in wide:
        return {}
    families: dict[tuple, list[tuple[str, float | None]]] = {}
    base = wide[baseline]
    for run, table in wide.items():
        if run == baseline:
            continue
        for key in table.columns:
            if key in base.columns:
                p, _ = paired_t_test(table[key], base[key])
                families.setdefault(tuple(key), []).append((run, p))
    result = {}
    for key, tests in families.items():
        adjusted = holm([p for _, p in tests])
        for (run, p), q in zip(tests, adjusted, strict=True):
            result[(run, *key)] = (p, q)
    return result


def summarise(
    per_query: pd.DataFrame,
    baseline: str | None = None,
    samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """One row per (run, metric, variant, cutoff) of a long per-query frame, runs in order of appearance: ``value``
    (mean over the run's queries), ``queries``, ``ci_low``, ``ci_high``, ``p_value`` (:func:`against_baseline`'s
    adjusted p; ``None`` for the baseline itself and without one)."""
    rows = []
    wide = wide_values(per_query)
    tests = against_baseline(wide, baseline) if baseline is not None else {}
    for run, table in wide.items():
        low, high = bootstrap_ci(table.to_numpy(), samples, seed) if len(table) else ([], [])
        for i, key in enumerate(table.columns):
            column = table[key]
            p = tests.get((run, *key), (None, None))[1]
            rows.append(
                {
                    "run": run,
                    "metric": key[0],
                    "variant": key[1],
                    "cutoff": int(key[2]),
                    "value": float(column.mean()),
                    "queries": int(column.notna().sum()),
                    "ci_low": float(low[i]),
                    "ci_high": float(high[i]),
                    "p_value": p,
                }
            )
    summary = pd.DataFrame(rows)
    if len(summary):
        summary["p_value"] = pd.Series([row["p_value"] for row in rows], index=summary.index, dtype=object)
    return summary


def finite(value) -> float | None:
    """``value`` as a float, or None when it is missing, NaN or infinite (what a table and JSON show)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def json_safe(value):
    """``value`` with its dicts, lists and tuples walked, numpy scalars as Python's and NaN or infinities as None
    (JSON has no NaN): what a report's dict is before it is stored or served."""
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    if isinstance(value, np.generic):
        value = value.item()
    return None if isinstance(value, float) and not math.isfinite(value) else value


def run_mean(values: pd.Series) -> float | None:
    """A run's mean of a per-query measure over the queries with a value (None: none has one):
    the figure a report table's cell shows."""
    return finite(values.mean()) if len(values) else None


def wide_values(per_query: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per run (in order of appearance), its queries × ``(metric, variant, cutoff)`` values."""
    frame = per_query.astype({"cutoff": "int64"})
    return {
        run: part.pivot(index="qid", columns=KEYS, values="value") for run, part in frame.groupby("run", sort=False)
    }

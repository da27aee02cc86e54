"""Uncertainty of a model's mean: bootstrap confidence intervals and paired t-tests.

- **Bootstrap CI** (percentile method, seeded): resample the queries with replacement
  ``samples`` times; the CI is the 2.5th and 97.5th percentiles of the resampled means.
  Resampling is done with multinomial weights so that all metrics of a run share the same
  resamples and cost one matrix product.
- **Paired t-test** (``scipy.stats.ttest_rel``) of a run against the baseline over the
  queries both contain, per (metric, variant, cutoff); p-values are Bonferroni-corrected:
  multiplied by the number of comparisons in the report and capped at 1. When the test is
  undefined (fewer than two common queries, or no variation in the differences) the p-value
  is ``None``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from .defaults import DEFAULT_SAMPLES, DEFAULT_SEED

LEVEL = 0.95


def bootstrap_means(values: np.ndarray, samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED) -> np.ndarray:
    """``[samples × columns]`` means of resampled rows of ``values`` (``[queries × columns]``).

    NaN cells (a query without a value for that column) are excluded from that column's means.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    n = values.shape[0]
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(n, np.full(n, 1.0 / n), size=samples).astype(np.float64)
    present = ~np.isnan(values)
    sums = weights @ np.where(present, values, 0.0)
    counts = weights @ present.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / counts


def bootstrap_ci(
    values: np.ndarray, samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED, level: float = LEVEL
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap CI of the mean of every column: ``(low, high)`` arrays."""
    means = bootstrap_means(values, samples, seed)
    alpha = (1.0 - level) / 2.0
    low = np.nanquantile(means, alpha, axis=0)
    high = np.nanquantile(means, 1.0 - alpha, axis=0)
    return low, high


def paired_t_test(values: pd.Series, baseline: pd.Series) -> tuple[float | None, int]:
    """Two-sided paired t-test over the queries (index) both series have: ``(p, common)``."""
    joined = pd.concat([values.rename("a"), baseline.rename("b")], axis=1, join="inner").dropna()
    common = len(joined)
    if common < 2:
        return None, common
    difference = joined["a"] - joined["b"]
    if np.allclose(difference.to_numpy(), difference.iloc[0], rtol=0.0, atol=1e-15):
        return None, common
    result = stats.ttest_rel(joined["a"].to_numpy(), joined["b"].to_numpy())
    p = float(result.pvalue)
    return (None if np.isnan(p) else p), common


def bonferroni(p_values: list[float | None]) -> list[float | None]:
    """Bonferroni correction: each p times the number of tests made (``None``/NaN entries aside), capped at 1."""
    kept = [None if p is None or np.isnan(p) else float(p) for p in p_values]
    tests = sum(p is not None for p in kept)
    return [None if p is None else min(1.0, p * tests) for p in kept]


KEYS = ["metric", "variant", "cutoff"]


def summarise(
    per_query: pd.DataFrame,
    baseline: str | None = None,
    samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """One row per (run, metric, variant, cutoff) of a long per-query frame.

    Columns ``value`` (mean over the run's queries), ``queries``, ``ci_low``, ``ci_high`` and
    ``p_value`` (Bonferroni-corrected, against ``baseline``; ``None`` for the baseline itself
    and without a baseline). Runs keep their order of appearance.
    """
    rows = []
    wide = {
        run: frame.pivot(index="qid", columns=KEYS, values="value")
        for run, frame in per_query.groupby("run", sort=False)
    }
    for run, table in wide.items():
        low, high = bootstrap_ci(table.to_numpy(), samples, seed) if len(table) else ([], [])
        for i, key in enumerate(table.columns):
            column = table[key]
            p = None
            if baseline is not None and run != baseline and baseline in wide and key in wide[baseline].columns:
                p, _ = paired_t_test(column, wide[baseline][key])
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
        summary["p_value"] = pd.Series(bonferroni(list(summary["p_value"])), index=summary.index, dtype=object)
    return summary

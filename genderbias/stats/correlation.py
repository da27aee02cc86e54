"""The correlation of two per-query measures of one run: Pearson's r and Kendall's τ-b with their p-values.

Pure (numpy, pandas, scipy; no Django): the report tables' correlation columns (``metrics.tables``, the
``†`` mark of :data:`genderbias.stats.significance.CORRELATION_POLICY`) read it, so a notebook gets the
same figures.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import stats

from genderbias.stats.significance import finite

__all__ = ["correlation"]


def correlation(a: pd.Series, b: pd.Series) -> dict:
    """Pearson's r and Kendall's τ (τ-b, ``scipy.stats``) with their two-sided p-values over the
    index (queries) both series have a value for; None where undefined (fewer than 3 common
    queries, or a constant series)."""
    joined = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner").dropna()
    n = len(joined)
    result = {"n": n, "pearson_r": None, "pearson_p": None, "kendall_tau": None, "kendall_p": None}
    if n < 3 or joined["a"].nunique() < 2 or joined["b"].nunique() < 2:
        return result
    x, y = joined["a"].to_numpy(dtype=np.float64), joined["b"].to_numpy(dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pearson = stats.pearsonr(x, y)
        kendall = stats.kendalltau(x, y)
    result.update(
        pearson_r=finite(pearson.statistic),
        pearson_p=finite(pearson.pvalue),
        kendall_tau=finite(kendall.statistic),
        kendall_p=finite(kendall.pvalue),
    )
    return result

"""ppi-python's PPI++ interval for a label-corrected class mean, built as issue 81 builds it: the reference
the audit intervals (:mod:`genderbias.machine.proportions`) are checked against by the tests and the
audit-coverage benchmark (``ppi_py`` is a test and benchmark dependency, not the library's)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from ppi_py import ppi_mean_ci

from genderbias.ranking.defaults import LEVEL

ALPHA = 1 - LEVEL


def inverted_class_mean_ci(
    values: np.ndarray, in_truth: np.ndarray, in_predicted: np.ndarray, audited: Sequence[int], grid: np.ndarray
) -> tuple[float, float]:
    """The θ of ``grid`` whose ``ppi_mean_ci`` (λ tuned at each θ, alpha passed: it defaults to 0.1) of
    (v − θ) · 1(T = c) holds 0, their lowest and highest. values: the run's value on every query of the
    batch; in_truth: 1(T = c) on the audited queries, in ``audited``'s order; in_predicted: 1(P = c) on
    every query. NaN, NaN when no θ of the grid is kept."""
    audited = np.asarray(audited)
    kept = []
    for theta in grid:
        yhat_all = (values - theta) * in_predicted
        lo, hi = ppi_mean_ci((values[audited] - theta) * in_truth, yhat_all[audited], yhat_all, alpha=ALPHA)
        if lo[0] <= 0 <= hi[0]:
            kept.append(theta)
    return (min(kept), max(kept)) if kept else (float("nan"), float("nan"))


def share_ci(in_truth: np.ndarray, in_predicted: np.ndarray, audited: Sequence[int]) -> tuple[float, float]:
    """``ppi_mean_ci`` of the indicator 1(T = c) (the share of class c), clamped to [0, 1]."""
    lo, hi = ppi_mean_ci(in_truth, in_predicted[np.asarray(audited)], in_predicted, alpha=ALPHA)
    return max(float(lo[0]), 0.0), min(float(hi[0]), 1.0)

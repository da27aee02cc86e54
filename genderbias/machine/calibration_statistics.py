"""Calibration of a machine pre-labeller against a blind human sample: how good the machine is on the whole batch
(each figure defined in docs/prelabelling.md, "The report"). Pure numpy; the sample and its weights:
:mod:`genderbias.machine.calibration_sample`.

Every figure is weighted to the batch (weights N_s/n_s; 1 without). Cohen's κ is ``nan`` (``None`` in
:meth:`CalibrationFigures.as_dict`) when p_e = 1 (one label used throughout by both): agreement beyond chance
cannot be measured when chance agrees perfectly. κ's percentile bootstrap resamples within machine-label strata
when weighted, as the sample was drawn. ECE and Brier are top-label: the pre-labellers give one confidence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from genderbias.labels import LABELS
from genderbias.stats.significance import json_safe

__all__ = ["calibration_figures"]

#: Bootstrap resamples are drawn in chunks of about this many index cells, so memory stays
#: bounded whatever the sample size and number of resamples.
_BOOTSTRAP_CELLS = 2_000_000


@dataclass
class CalibrationFigures:
    n: int
    accuracy: float
    kappa: float
    kappa_ci: tuple[float, float]
    per_category: dict[str, dict[str, float | int | None]]
    confusion: list[list[float]]  #: rows = human label, columns = machine label, in label order
    ece: float
    brier: float
    reliability: list[dict]  #: per non-empty bin: low, high, count, confidence, accuracy
    weighted: bool

    def as_dict(self) -> dict:
        """JSON-ready: tuples as lists, NaN and infinities as ``None`` (JSON has no NaN)."""
        return json_safe(asdict(self))


def _codes(values: Sequence[str], labels: Sequence[str], what: str) -> np.ndarray:
    index = {label: i for i, label in enumerate(labels)}
    unknown = sorted({str(v) for v in values if v not in index})
    if unknown:
        raise ValueError(f"{what} labels not in {tuple(labels)}: {unknown}")
    return np.fromiter((index[v] for v in values), dtype=np.int64, count=len(values))


def _validate(
    machine: Sequence[str],
    confidence: Sequence[float],
    human: Sequence[str],
    weights: Sequence[float] | None,
    labels: Sequence[str],
    bins: int,
    bootstrap: int,
    alpha: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Label codes, confidences and weights as arrays, or ValueError saying what is wrong."""
    if len(machine) == 0:
        raise ValueError("no items: calibration needs at least one human-labelled item")
    lengths = {"machine": len(machine), "confidence": len(confidence), "human": len(human)}
    if weights is not None:
        lengths["weights"] = len(weights)
    if len(set(lengths.values())) > 1:
        raise ValueError(f"lengths differ: {lengths}")
    if len(set(labels)) != len(labels) or not labels:
        raise ValueError(f"labels must be distinct and not empty, got {tuple(labels)}")
    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins}")
    if bootstrap < 0:
        raise ValueError(f"bootstrap must not be negative, got {bootstrap}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")
    m = _codes(machine, labels, "machine")
    h = _codes(human, labels, "human")
    c = np.asarray(confidence, dtype=float)
    if not np.all((c >= 0) & (c <= 1)):  # also rejects NaN
        raise ValueError("confidences must be in [0, 1]")
    if weights is None:
        w = np.ones(len(m))
    else:
        w = np.asarray(weights, dtype=float)
        if not np.all(np.isfinite(w) & (w > 0)):
            raise ValueError("weights must be positive and finite")
    return m, c, h, w


def _kappa(confusion: np.ndarray) -> np.ndarray:
    """Cohen's κ of a ``[k × k]`` confusion matrix or a ``[B × k × k]`` stack; ``nan`` where p_e = 1 (a single
    non-zero cell, on the diagonal), detected structurally rather than by comparing floats with 1."""
    total = confusion.sum(axis=(-2, -1))
    rows, cols = confusion.sum(axis=-1), confusion.sum(axis=-2)
    observed = total - np.trace(confusion, axis1=-2, axis2=-1)  # W·(1 − p_o)
    expected = total - (rows * cols).sum(axis=-1) / total  # W·(1 − p_e)
    single = (np.count_nonzero(confusion, axis=(-2, -1)) == 1) & (
        np.count_nonzero(np.diagonal(confusion, axis1=-2, axis2=-1), axis=-1) == 1
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(single, np.nan, 1.0 - observed / np.where(single, 1.0, expected))


def _confusions(cells: np.ndarray, w: np.ndarray, size: int) -> np.ndarray:
    """Weighted confusion matrices of rows of cell codes (h·k + m): ``[rows × k × k]``."""
    rows = cells.shape[0]
    offsets = (np.arange(rows) * size * size)[:, None]
    flat = np.bincount((cells + offsets).ravel(), weights=w.ravel(), minlength=rows * size * size)
    return flat.reshape(rows, size, size)


def _bootstrap_indices(rng: np.random.Generator, strata: list[np.ndarray], rows: int, n: int) -> np.ndarray:
    """``[rows × n]`` item indices: each stratum's positions resampled within the stratum."""
    indices = np.empty((rows, n), dtype=np.int64)
    start = 0
    for positions in strata:
        draws = rng.integers(0, len(positions), size=(rows, len(positions)))
        indices[:, start : start + len(positions)] = positions[draws]
        start += len(positions)
    return indices


def _resampling_strata(m: np.ndarray, size: int, *, weighted: bool) -> list[np.ndarray]:
    """Positions to resample within: by machine label for a weighted sample, as it was drawn; else all."""
    if not weighted:
        return [np.arange(len(m))]
    return [np.flatnonzero(m == k) for k in range(size) if np.any(m == k)]


def _bootstrap_kappa(
    cells: np.ndarray,
    w: np.ndarray,
    size: int,
    strata: list[np.ndarray],
    *,
    bootstrap: int,
    seed: int,
    alpha: float,
) -> tuple[float, float]:
    """Percentile interval of κ over ``bootstrap`` resamples (``(nan, nan)`` when none is defined) of the items'
    confusion ``cells`` (h·k + m) within ``strata``; each chunk of resamples is one ``bincount``."""
    if bootstrap == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    n = len(cells)
    kappas = np.empty(bootstrap)
    chunk = max(1, _BOOTSTRAP_CELLS // n)
    for start in range(0, bootstrap, chunk):
        rows = min(chunk, bootstrap - start)
        indices = _bootstrap_indices(rng, strata, rows, n)
        kappas[start : start + rows] = _kappa(_confusions(cells[indices], w[indices], size))
    kappas = kappas[~np.isnan(kappas)]
    if len(kappas) == 0:
        return (math.nan, math.nan)
    low, high = np.quantile(kappas, [alpha / 2, 1 - alpha / 2])
    return (float(low), float(high))


def _ratio(numerator: float, denominator: float) -> float | None:
    return float(numerator / denominator) if denominator > 0 else None


def _per_category(confusion: np.ndarray, h: np.ndarray, labels: Sequence[str]) -> dict:
    support = np.bincount(h, minlength=len(labels))
    diagonal, predicted, actual = np.diag(confusion), confusion.sum(axis=0), confusion.sum(axis=1)
    return {
        label: {
            "precision": _ratio(diagonal[k], predicted[k]),
            "recall": _ratio(diagonal[k], actual[k]),
            "support": int(support[k]),
        }
        for k, label in enumerate(labels)
    }


def _binned(confidence: np.ndarray, correct: np.ndarray, w: np.ndarray, bins: int) -> tuple[list[dict], float]:
    """The reliability diagram's non-empty bins and the top-label ECE. Edges are b / bins, and an item on an
    edge goes to the bin above, so 0.3 is in [0.3, 0.4) with 10 bins, not lost to ``0.3 * 10`` rounding."""
    edges = np.arange(bins + 1) / bins
    which = np.clip(np.searchsorted(edges, confidence, side="right") - 1, 0, bins - 1)
    count = np.bincount(which, minlength=bins)
    used = np.flatnonzero(count)  # weights are positive: a bin has weight iff it has items
    weight = np.bincount(which, weights=w, minlength=bins)[used]
    mean_confidence = np.bincount(which, weights=w * confidence, minlength=bins)[used] / weight
    mean_correct = np.bincount(which, weights=w * correct, minlength=bins)[used] / weight
    ece = float((weight / weight.sum() * np.abs(mean_correct - mean_confidence)).sum())
    reliability = [
        {
            "low": float(edges[b]),
            "high": float(edges[b + 1]),
            "count": int(count[b]),
            "confidence": float(mean_confidence[i]),
            "accuracy": float(mean_correct[i]),
        }
        for i, b in enumerate(used)
    ]
    return reliability, ece


def calibration_figures(
    machine: Sequence[str],
    confidence: Sequence[float],
    human: Sequence[str],
    *,
    weights: Sequence[float] | None = None,
    labels: Sequence[str] = LABELS,
    bins: int = 10,
    bootstrap: int = 2000,
    seed: int = 0,
    alpha: float = 0.05,
) -> CalibrationFigures:
    """How far the machine labels and confidences can be trusted, from the human sample (formulas: module docstring).

    ``machine[i]``, ``confidence[i]`` and ``human[i]`` describe one sampled query. With ``weights`` (stratum weights
    N_s / n_s) the figures estimate the whole batch. ``bootstrap=0`` skips κ's interval (``(nan, nan)``).
    """
    m, c, h, w = _validate(machine, confidence, human, weights, labels, bins, bootstrap, alpha)
    size = len(labels)
    cells = h * size + m
    confusion = np.bincount(cells, weights=w, minlength=size * size).reshape(size, size)
    total = confusion.sum()
    correct = (m == h).astype(float)
    strata = _resampling_strata(m, size, weighted=weights is not None)
    reliability, ece = _binned(c, correct, w, bins)
    return CalibrationFigures(
        n=len(m),
        accuracy=float(np.trace(confusion) / total),
        kappa=float(_kappa(confusion)),
        kappa_ci=_bootstrap_kappa(cells, w, size, strata, bootstrap=bootstrap, seed=seed, alpha=alpha),
        per_category=_per_category(confusion, h, labels),
        confusion=confusion.tolist(),
        ece=ece,
        brier=float((w * (c - correct) ** 2).sum() / total),
        reliability=reliability,
        weighted=weights is not None,
    )

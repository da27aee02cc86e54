"""The crowd model refitted on resampled items (bootstrap) and without groups of answers (jackknife): their
spread is the model's own estimation error, which every interval built on its posteriors carries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from genderbias.crowd.estimation import Encoded, fit
from genderbias.stats import intervals

__all__ = ["CHUNK", "RefitProgress", "bootstrap_posteriors", "jackknife_groups", "leave_out_posteriors"]

#: Bootstrap draws refitted together (memory: draws × judgments × labels floats).
CHUNK = 50


#: What a refit's ``progress`` is told after each chunk: ``(draws refitted, draws in all)``.
RefitProgress = Callable[[int, int], None]


def bootstrap_posteriors(
    encoded: Encoded,
    weights: np.ndarray,
    start: np.ndarray,
    *,
    max_iter: int = 50,
    tol: float = 1e-5,
    progress: RefitProgress | None = None,
) -> np.ndarray:
    """[B × N × K] (float32) held-out posteriors of every item (also one a draw left out) under the model
    refitted with each draw's multiplicities ``weights`` [B × N], warm-started from ``start`` [N × K].
    ``progress``: told ``(refitted, total)`` after every :data:`CHUNK` draws."""
    weights = np.asarray(weights, dtype=np.float64)
    out = np.empty((weights.shape[0], encoded.n_items, len(encoded.labels)), dtype=np.float32)
    for first in range(0, weights.shape[0], CHUNK):
        chunk = weights[first : first + CHUNK]
        out[first : first + len(chunk)] = fit(encoded, chunk, start, max_iter=max_iter, tol=tol).held_out
        if progress is not None:
            progress(first + len(chunk), weights.shape[0])
    return out


#: What a delete-a-group jackknife of the crowd model leaves out (:func:`jackknife_groups`).
LEAVE_OUT = ("workers", "answers")


def jackknife_groups(encoded: Encoded, by: str, blocks: int, fixed: Sequence[str] = ()) -> np.ndarray:
    """Each answer's group of a delete-a-group jackknife ([J]; −1 for the ``fixed`` workers', never left out),
    G = min(blocks, units): ``workers`` keeps a worker's answers together (dealt by answer counts);
    ``answers`` deals every answer on its own, in turn.
    """
    if by not in LEAVE_OUT:
        raise ValueError(f"jackknife by {by!r}: expected one of {', '.join(LEAVE_OUT)}")
    fixed = {str(w) for w in fixed}
    movable_worker = np.array([str(w) not in fixed for w in encoded.workers], dtype=bool)
    out = np.full(len(encoded.worker_idx), -1, dtype=np.int64)
    movable = movable_worker[encoded.worker_idx] if len(encoded.worker_idx) else np.zeros(0, dtype=bool)
    if by == "answers":
        out[movable] = np.arange(movable.sum()) % max(1, min(blocks, int(movable.sum())))
        return out
    counts = np.bincount(encoded.worker_idx, minlength=encoded.n_workers)
    group = np.full(encoded.n_workers, -1, dtype=np.int64)
    if movable_worker.any():
        group[movable_worker] = intervals.unit_groups(counts[movable_worker], blocks)
    return group[encoded.worker_idx]


#: EM's stopping rule for the jackknife refits, tighter than the bootstrap's: a warm-started refit stopped
#: early stays near the full fit, and a jackknife's spread is multiplied by G − 1 (docs/metrics.md).
JACKKNIFE_MAX_ITER, JACKKNIFE_TOL = 300, 1e-8


def leave_out_posteriors(
    encoded: Encoded,
    start: np.ndarray,
    groups: np.ndarray,
    *,
    max_iter: int = JACKKNIFE_MAX_ITER,
    tol: float = JACKKNIFE_TOL,
) -> np.ndarray:
    """[G × N × K] (float32) held-out posteriors under the model refitted without each group of answers
    (``groups`` [J]; −1 always kept), warm-started from ``start``. By workers their spread is the variance
    from which workers a study got, which resampling items does not see; by answers, the answers' own share,
    which both see (:func:`genderbias.stats.intervals.extra_variance`)."""
    count = int(groups.max()) + 1 if len(groups) else 0
    out = np.empty((count, encoded.n_items, len(encoded.labels)), dtype=np.float32)
    for g in range(count):
        keep = groups != g
        reduced = replace(
            encoded,
            item_idx=encoded.item_idx[keep],
            worker_idx=encoded.worker_idx[keep],
            label_idx=encoded.label_idx[keep],
        )
        out[g] = fit(reduced, None, start, max_iter=max_iter, tol=tol).held_out[0]
    return out

"""Replicate crowds drawn from a fitted crowd model on the batch's own design (its (item, worker) pairs and
gold), true labels from the posteriors, answers from the fitted rows with item difficulty of a given spread;
refitted, they show how far the model sits from a truth it is not told.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from genderbias.crowd.estimation import Encoded, Fit, fit
from genderbias.crowd.simulation.answers import pick, tilt_errors

__all__ = ["replicate_crowds"]

BIAS_REPLICATES = 8


def replicate_crowds(
    encoded: Encoded,
    posteriors: np.ndarray,
    confusion: np.ndarray,
    spread: float,
    *,
    replicates: int = BIAS_REPLICATES,
    seed: int = 0,
    rng: np.random.Generator | None = None,
    exempt: Sequence[int] = (),
) -> tuple[np.ndarray, list[Fit], list[Encoded]]:
    """``(truth [R × N], fits, answers)``: ``replicates`` replicate crowds, refitted (the workers of index ``exempt``,
    a machine, answer without difficulty), drawn by ``rng`` (default: seeded by ``seed``)."""
    rng = np.random.default_rng([seed, 1]) if rng is None else rng
    truth = pick(
        rng.random((replicates, encoded.n_items)), np.broadcast_to(posteriors, (replicates, *posteriors.shape))
    )
    if len(encoded.gold_rows):
        truth[:, encoded.gold_rows] = encoded.gold_onehot.argmax(axis=1)[None, :]
    rows = confusion[encoded.worker_idx[None, :], truth[:, encoded.item_idx], :]
    factor = np.exp(spread * rng.standard_normal((replicates, encoded.n_items)))[:, encoded.item_idx]
    if len(exempt):
        factor[:, np.isin(encoded.worker_idx, exempt)] = 1.0
    chances = tilt_errors(rows, truth[:, encoded.item_idx], factor)
    drawn = pick(rng.random(chances.shape[:-1]), chances)
    refitted = [replace(encoded, label_idx=drawn[r]) for r in range(replicates)]
    return truth, [fit(e, max_iter=100) for e in refitted], refitted

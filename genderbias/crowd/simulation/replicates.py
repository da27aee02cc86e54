"""Replicate crowds drawn from a fitted crowd model on the batch's own design, and refitted.

Pure (numpy; no Django). Each replicate keeps the batch's (item, worker) pairs and gold questions,
draws each item's true label from the fit's posteriors and each answer from its worker's fitted
row, with the items' difficulty of a given spread (the simulator's draws,
:mod:`genderbias.crowd.simulation.answers`); refitted, they show how far the model sits from
a truth it is not told (:mod:`genderbias.crowd.calibration`, the de-noised accuracy's bias in
:func:`genderbias.crowd.denoised.denoised_bias`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from genderbias.crowd.estimation import Encoded, Fit, fit
from genderbias.crowd.simulation.answers import pick, tilt_errors

BIAS_REPLICATES = 8


def refitted_replicates(
    encoded: Encoded,
    posteriors: np.ndarray,
    confusion: np.ndarray,
    spread: float,
    count: int,
    rng,
    exempt: Sequence[int] = (),
) -> tuple[np.ndarray, list[Fit], list[Encoded]]:
    """``count`` replicate crowds of the batch as fitted, with item difficulty of spread ``spread`` (not for
    the workers of index ``exempt``: a machine whose errors do not follow the items' difficulty), refitted."""
    truth = pick(rng.random((count, encoded.n_items)), np.broadcast_to(posteriors, (count, *posteriors.shape)))
    if len(encoded.gold_rows):
        truth[:, encoded.gold_rows] = encoded.gold_onehot.argmax(axis=1)[None, :]
    rows = confusion[encoded.worker_idx[None, :], truth[:, encoded.item_idx], :]
    factor = np.exp(spread * rng.standard_normal((count, encoded.n_items)))[:, encoded.item_idx]
    if len(exempt):
        factor[:, np.isin(encoded.worker_idx, exempt)] = 1.0
    chances = tilt_errors(rows, truth[:, encoded.item_idx], factor)
    drawn = pick(rng.random(chances.shape[:-1]), chances)
    refitted = [replace(encoded, label_idx=drawn[r]) for r in range(count)]
    return truth, [fit(e, max_iter=100) for e in refitted], refitted


def replicate_crowds(
    encoded: Encoded,
    posteriors: np.ndarray,
    confusion: np.ndarray,
    spread: float,
    *,
    replicates: int = BIAS_REPLICATES,
    seed: int = 0,
    exempt: Sequence[int] = (),
) -> tuple[np.ndarray, list[Fit], list[Encoded]]:
    """``(truth [R × N], fits, answers)`` of ``replicates`` crowds drawn from the fit (true labels from its
    ``posteriors`` [N × K], the batch's own worker–item pairs answered from its rows ``confusion`` [W × K × K])
    with item difficulty of spread ``spread`` (as :func:`difficulty_spread` draws them), each refitted
    (``answers``: the replicate's judgments): how far the model sits from a truth it is not told. The workers
    of index ``exempt`` answer without the items' difficulty."""
    return refitted_replicates(
        encoded, posteriors, confusion, spread, replicates, np.random.default_rng([seed, 1]), exempt
    )

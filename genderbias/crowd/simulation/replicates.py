"""Replicate crowds drawn from a fitted crowd model on the batch's own design, and refitted.

Pure (numpy; no Django). Each replicate keeps the batch's (item, worker) pairs and gold questions,
draws each item's true label from the fit's posteriors and each answer from its worker's fitted
row, with the items' difficulty of a given spread; refitted, they show how far the model sits from
a truth it is not told (:mod:`genderbias.crowd.calibration`, the de-noised accuracy's bias in
:func:`genderbias.crowd.denoised.denoised_bias`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from genderbias.crowd.estimation import Encoded, Fit, fit

BIAS_REPLICATES = 8


def _answers_with_difficulty(
    rng: np.random.Generator, rows: np.ndarray, truth: np.ndarray, factor: np.ndarray
) -> np.ndarray:
    """Answers drawn from ``rows`` [R × J × K] (each answer's fitted row given its true label ``truth``
    [R × J]) with each answer's odds of being wrong × ``factor`` [R × J], the wrong answers keeping their
    proportions."""
    k = rows.shape[-1]
    onehot = np.eye(k)[truth]
    right = np.clip((rows * onehot).sum(axis=2), 1e-12, 1 - 1e-12)
    wrong = rows * (1 - onehot)
    wrong /= np.maximum(wrong.sum(axis=2, keepdims=True), 1e-300)
    p_right = 1.0 / (1.0 + (1.0 - right) / right * factor)
    chances = (1.0 - p_right)[:, :, None] * wrong + p_right[:, :, None] * onehot
    return np.minimum((rng.random(truth.shape)[:, :, None] > chances.cumsum(axis=2)).sum(axis=2), k - 1)


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
    k = len(encoded.labels)
    truth = (rng.random((count, encoded.n_items))[:, :, None] > posteriors.cumsum(axis=1)[None, :, :-1]).sum(axis=2)
    truth = np.minimum(truth, k - 1)
    if len(encoded.gold_rows):
        truth[:, encoded.gold_rows] = encoded.gold_onehot.argmax(axis=1)[None, :]
    rows = confusion[encoded.worker_idx[None, :], truth[:, encoded.item_idx], :]
    factor = np.exp(spread * rng.standard_normal((count, encoded.n_items)))[:, encoded.item_idx]
    if len(exempt):
        factor[:, np.isin(encoded.worker_idx, exempt)] = 1.0
    drawn = _answers_with_difficulty(rng, rows, truth[:, encoded.item_idx], factor)
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

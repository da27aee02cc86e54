"""A simulated crowd's answers: who answers which query, and what they say. The one place a simulated
answer is drawn, so every simulation (escalation, studies, replicates, the dependence check, and the echo
check's copiers in its tests) reads a worker the same way.
"""

from __future__ import annotations

import numpy as np

__all__ = ["deal_hits", "pick", "tilt_errors"]


def pick(uniforms: np.ndarray, chances: np.ndarray) -> np.ndarray:
    """Per row of ``chances`` [..., K], the label its uniform falls on (given, so paired draws can share them)."""
    k = chances.shape[-1]
    return np.minimum((uniforms[..., None] > np.cumsum(chances, axis=-1)).sum(axis=-1), k - 1)


def tilt_errors(rows: np.ndarray, truth: np.ndarray, factor: np.ndarray | float) -> np.ndarray:
    """``rows`` [..., K] (answer probabilities given ``truth`` [...]) with the odds of a wrong answer × ``factor``
    (an item's difficulty, or D's exp(D·z)), the wrong answers keeping their proportions."""
    k = rows.shape[-1]
    onehot = np.eye(k)[truth]
    right = np.clip((rows * onehot).sum(axis=-1), 1e-12, 1 - 1e-12)
    wrong = rows * (1 - onehot)
    wrong /= np.maximum(wrong.sum(axis=-1, keepdims=True), 1e-300)
    p_right = 1.0 / (1.0 + (1.0 - right) / right * factor)
    return (1.0 - p_right)[..., None] * wrong + p_right[..., None] * onehot


def deal_hits(
    n: int, shares: np.ndarray, rng: np.random.Generator, queries_per_hit: int = 10
) -> tuple[np.ndarray, np.ndarray]:
    """``(hit_of, ranking)``: each query's HIT (random order) and per HIT its workers in the order they take
    it (distinct, by ``shares`` without replacement: the Gumbel-top-k order)."""
    hit_of = np.empty(n, dtype=int)
    hit_of[rng.permutation(n)] = np.arange(n) // queries_per_hit
    hits = int(hit_of.max()) + 1 if n else 0
    ranking = np.argsort(-(np.log(shares)[None, :] + rng.gumbel(size=(hits, len(shares)))), axis=1)
    return hit_of, ranking

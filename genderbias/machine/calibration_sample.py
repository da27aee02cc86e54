"""The blind sample a machine pre-labeller is calibrated on, and the weight each sampled query carries.

Pure numpy. The figures it feeds: :mod:`genderbias.machine.calibration_statistics`. The sample is a simple
random sample in draw order (:func:`random_sample`), which routing's guarantee needs; its figures are
post-stratified by machine label: a sampled item of stratum s (N_s queries, n_s sampled) stands for
N_s / n_s queries (:func:`stratum_weights`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Stratum", "random_sample", "stratum_weights"]


@dataclass(frozen=True)
class Stratum:
    label: str  #: machine label of the stratum
    population: int  #: queries of the batch with this machine label
    sampled: int  #: of them in the sample


def random_sample(qids: Collection[str], n: int, *, seed: int, exclude: Collection[str] = ()) -> list[str]:
    """A simple random sample without replacement of ``n`` of ``qids`` (``exclude`` left out), in draw order: one
    permutation of the sorted ``qids`` ∪ ``exclude`` from ``seed`` read from the front, so an extension (same seed,
    earlier draws in ``exclude``) takes the next ``n`` and all draws are a prefix of one random permutation.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    excluded = set(exclude)
    population = sorted(set(qids) | excluded)
    if not set(population) - excluded:
        raise ValueError("no queries left to sample")
    order = np.random.default_rng(seed).permutation(len(population))
    drawn: list[str] = []
    for i in order:
        if population[i] not in excluded:
            drawn.append(population[i])
            if len(drawn) == n:
                break
    return drawn


def stratum_weights(strata: Sequence[Stratum]) -> dict[str, float]:
    """label -> N_s / n_s; strata with nothing sampled have no item to weight and are left out."""
    return {s.label: s.population / s.sampled for s in strata if s.sampled > 0}

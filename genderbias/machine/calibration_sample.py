"""The blind sample a machine pre-labeller is calibrated on, and the weight each sampled query carries.

Pure numpy, no Django. The figures it feeds: :mod:`genderbias.machine.calibration_statistics`.

Sampling
    The blind sample is a simple random sample in draw order (:func:`random_sample`), which
    routing's guarantee needs (:mod:`genderbias.machine.routing_statistics`); its figures are post-stratified by
    the machine's label: stratum s (machine label s) has N_s queries of the batch, n_s of
    them sampled, and a sampled item of stratum s stands for w = N_s / n_s queries
    (:func:`stratum_weights`). :func:`stratified_sample` (:func:`allocate`: proportional,
    largest remainder, at least min(2, N_s) each) drew the samples made before that.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from genderbias.labels import LABELS


@dataclass(frozen=True)
class Stratum:
    label: str  #: machine label of the stratum
    population: int  #: queries of the batch with this machine label
    sampled: int  #: of them in the sample


def _label_order(label: str) -> tuple[int, str]:
    """Canonical labels first, in LABELS order; anything else after, by name."""
    return (LABELS.index(label), "") if label in LABELS else (len(LABELS), label)


def _largest_remainder(quotas: dict[str, float], sizes: Mapping[str, int]) -> dict[str, int]:
    """Integer parts of ``quotas`` plus one place each to the largest fractional remainders.

    Ties go to the larger stratum, then to the label order, so the result never depends on
    the mapping's iteration order.
    """
    places = {label: math.floor(quota) for label, quota in quotas.items()}
    left = round(sum(quotas.values())) - sum(places.values())
    ranked = sorted(quotas, key=lambda s: (-(quotas[s] - places[s]), -sizes[s], _label_order(s)))
    for label in ranked[:left]:
        places[label] += 1
    return places


def allocate(population: Mapping[str, int], n: int) -> dict[str, int]:
    """Proportional allocation of ``n`` sample places to strata, by largest remainder.

    Every non-empty stratum gets at least min(2, its size) when n allows, so every machine
    label is checked by people, and a rare label is not estimated from one item; when n is
    too small for that, at least 1 each; when too small even for that, plain proportional.
    Strata whose proportional share falls below the minimum get the minimum and the rest
    is shared proportionally among the others (repeated until stable). Never more than a
    stratum's size; the places sum to min(n, total). Every key of ``population`` is in the
    result (0 for an empty stratum).
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if any(size < 0 for size in population.values()):
        raise ValueError("stratum sizes must not be negative")
    places = dict.fromkeys(population, 0)
    sizes = {label: int(size) for label, size in population.items() if size > 0}
    total = sum(sizes.values())
    if n >= total:
        places.update(sizes)
        return places
    floors = {label: min(2, size) for label, size in sizes.items()}
    if sum(floors.values()) > n:
        floors = dict.fromkeys(sizes, 1) if len(sizes) <= n else dict.fromkeys(sizes, 0)
    fixed: set[str] = set()
    while True:
        rest = [label for label in sizes if label not in fixed]
        share = n - sum(floors[label] for label in fixed)
        rest_total = sum(sizes[label] for label in rest)
        quotas = {label: share * sizes[label] / rest_total for label in rest}
        below = {label for label in rest if quotas[label] < floors[label]}
        if not below:
            break
        fixed |= below
    places.update({label: floors[label] for label in fixed})
    for label, count in _largest_remainder(quotas, sizes).items():
        places[label] = min(count, sizes[label])
    return places


def stratified_sample(machine: Mapping[str, str], n: int, *, seed: int) -> tuple[list[str], list[Stratum]]:
    """A simple random sample of ``n`` queries within each machine-label stratum.

    ``machine`` maps qid -> machine label. The allocation is :func:`allocate`'s; within a
    stratum, qids are drawn without replacement by ``numpy.random.default_rng(seed)`` from
    the sorted qids, so the sample depends on the seed and the data, never on the mapping's
    iteration order. The sampled qids come back shuffled, so the order of HITs does not
    reveal the strata to annotators (the sample is blind). Strata are in LABELS order, only
    the non-empty ones.
    """
    unknown = sorted(set(machine.values()) - set(LABELS))
    if unknown:
        raise ValueError(f"machine labels not in {LABELS}: {unknown}")
    by_label: dict[str, list[str]] = {label: [] for label in LABELS}
    for qid in sorted(machine):
        by_label[machine[qid]].append(qid)
    population = {label: len(qids) for label, qids in by_label.items() if qids}
    if not population:
        raise ValueError("no queries to sample")
    places = allocate(population, n)
    rng = np.random.default_rng(seed)
    sample: list[str] = []
    strata = []
    for label in population:
        chosen = rng.choice(len(by_label[label]), size=places[label], replace=False)
        sample.extend(by_label[label][i] for i in sorted(chosen))
        strata.append(Stratum(label, population[label], places[label]))
    order = rng.permutation(len(sample))
    return [sample[i] for i in order], strata


def random_sample(qids: Collection[str], n: int, *, seed: int, exclude: Collection[str] = ()) -> list[str]:
    """A simple random sample without replacement of ``n`` of ``qids`` (those in ``exclude`` left
    out), in draw order: the blind sample routing's guarantee rests on.

    One fixed permutation of the whole population: ``numpy.random.default_rng(seed).permutation``
    of the sorted ``qids`` (``exclude`` included or not, it is the same permutation), read from
    the front, skipping the excluded ones. The first draw takes the first ``n``; an extension
    with the *same* seed and the earlier draws in ``exclude`` takes the next ``n``, so the
    union of all draws in draw order is a prefix of one uniformly random permutation of the
    population: a simple random sample, every query included with the same probability
    (:mod:`genderbias.machine.routing_statistics`). (A new ``choice`` from the same seed over the queries left
    would pick the first draw's neighbours in qid order: not a random sample.) Depends on the
    seed and the data only. Fewer than ``n`` when fewer are left.
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
    """label -> N_s / n_s, how many batch queries each sampled item of the stratum stands for.

    Strata with nothing sampled are left out: they have no item to weight (and the
    figures then describe only the strata that were sampled).
    """
    return {s.label: s.population / s.sampled for s in strata if s.sampled > 0}

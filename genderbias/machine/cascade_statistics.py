"""A cascade of labellers (e.g. rules → trained → chat model → crowd) with one guarantee; stated and argued in
docs/prelabelling.md, "Cascades". Pure numpy.

Stage i decides on V_i, the queries no earlier stage *looked at* that labeller i labelled, by
:func:`.certification.certify_threshold` on the first draw's sample items in V_i at δ_i = δ/m (union bound), all
on the exact test. Its test reads the sample items down to the first failed candidate t'_i; the queries looked at
and not kept go to the crowd, never to a later stage, whose sample items therefore stay a simple random sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from genderbias.machine.certification import MAX_CANDIDATES, Certification, certify_threshold
from genderbias.machine.routing_statistics import tied

__all__ = ["certify_cascade"]


@dataclass(frozen=True)
class Stage:
    """One labeller of the cascade on the blind sample."""

    index: int
    risk: float  #: δ_i
    population: int  #: |V_i|: queries it decided on
    sample_items: int  #: first-draw sample items in V_i
    threshold: float | None  #: lowest certified confidence (None: it keeps nothing)
    kept: np.ndarray = field(repr=False)  #: population indices it keeps (sample items included)
    looked_at: np.ndarray = field(repr=False)  #: G_i: the indices the stage's test read (kept ⊆ looked_at)
    certification: Certification | None = field(default=None, repr=False)
    decided: np.ndarray = field(default_factory=lambda: np.array([], dtype=int), repr=False)  #: V_i's indices

    @property
    def passed_on(self) -> int:
        return self.population - len(self.looked_at)


@dataclass(frozen=True)
class Cascade:
    stages: list[Stage]
    kept_by: np.ndarray  #: [N] the stage (0-based) whose label stands, −1: none (sample, crowd)
    target: float
    risk: float


def stage_risks(risk: float, stages: int) -> list[float]:
    """δ_i = δ/m: the union bound's even split, fixed before any label is seen."""
    if stages < 1:
        raise ValueError("a cascade needs at least one labeller")
    return [risk / stages] * stages


def certify_cascade(
    confidence: Sequence[Sequence[float]],
    correct: Sequence[Sequence[bool]],
    sample: Sequence[int],
    *,
    target: float,
    risk: float,
    planned: int | None = None,
    max_candidates: int = MAX_CANDIDATES,
    floors: Sequence[float | None] | None = None,
) -> Cascade:
    """The cascade on one blind sample. ``confidence`` ``[m, N]``: labeller i's confidence per routable query (NaN:
    no label); ``correct`` ``[m, N]``: its label equals the reference (read on sample items only); ``sample``: draw
    order, the first ``planned`` the first draw. ``floors``: per labeller, the lowest confidence it may keep, so a
    coarse labeller (``rules:0.8``) passes what lies below on unread.
    """
    conf = np.asarray(confidence, dtype=float)
    right = np.asarray(correct, dtype=bool)
    if conf.ndim != 2 or right.shape != conf.shape:
        raise ValueError("confidence and correct must both be labellers × queries")
    if not 0 < target <= 1 or not 0 < risk < 1:
        raise ValueError("target must be in (0, 1] and risk in (0, 1)")
    labelled = ~np.isnan(conf)
    if (labelled & ((conf < 0) | (conf > 1))).any():
        raise ValueError("confidences must be in [0, 1] (NaN: no label)")
    conf = np.where(labelled, tied(np.nan_to_num(conf)), np.nan)
    size = conf.shape[1]
    first = np.asarray(sample, dtype=int)[: planned or len(sample)]
    remaining = np.ones(size, dtype=bool)
    kept_by = np.full(size, -1)
    floors = list(floors) if floors is not None else [None] * len(conf)
    if len(floors) != len(conf) or any(f is not None and not 0 <= f <= 1 for f in floors):
        raise ValueError("one floor per labeller, each in [0, 1] or None")
    stages = []
    for i, delta in enumerate(stage_risks(risk, len(conf))):
        population = remaining & labelled[i]
        if floors[i] is not None:
            population &= np.nan_to_num(conf[i], nan=-1.0) >= float(tied(floors[i])) - 1e-12
        items = first[population[first]]
        if not population.any() or len(items) == 0:
            empty = np.array([], dtype=int)
            stages.append(
                Stage(i, delta, int(population.sum()), 0, None, empty, empty, None, np.flatnonzero(population))
            )
            continue
        result = certify_threshold(
            conf[i, items],
            right[i, items],
            conf[i, population],
            target=target,
            risk=delta,
            planned=len(items),
            max_candidates=max_candidates,
            extendable=False,
        )
        at = np.where(population, conf[i], -np.inf)
        kept = np.flatnonzero(at >= result.threshold) if result.threshold is not None else np.array([], dtype=int)
        failed = result.first_failure
        looked = np.flatnonzero(at >= failed["threshold"]) if failed is not None else np.flatnonzero(population)
        kept_by[kept] = i
        remaining[looked] = False
        decided = np.flatnonzero(population)
        stages.append(Stage(i, delta, len(decided), len(items), result.threshold, kept, looked, result, decided))
    return Cascade(stages, kept_by, target, risk)

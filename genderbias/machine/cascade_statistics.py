"""A cascade of labellers (e.g. rules → trained → chat model → crowd) with one guarantee.

Pure numpy, no Django. Each labeller in turn keeps only what it can certify at the target on
the blind sample; what it does not keep goes on to the next; what no machine keeps goes to
the crowd. The guarantee, for everything the machines keep together:

    P( some stage's kept set is right on less than a share A of it ) ≤ δ,

so with probability at least 1 − δ every stage's kept set, and hence their union (a union of
sets each at least A right is at least A right), is at least A right against the reference
label (:mod:`genderbias.crowd.simulation.escalation`).

Stage i works on U_i, the queries no earlier stage *looked at* (U_1: every routable query),
restricted to those labeller i labelled: V_i. It runs :func:`.routing_statistics.certify_threshold`
on V_i, with the first draw's sample items that fall in V_i, in draw order, at risk δ_i = δ/m
(m stages; a union bound), the whole δ_i on the exact test (``extendable=False``). Its
fixed-sequence test looks only at the sample items of the region G_i = {q ∈ V_i : c_i(q) ≥ t'_i},
t'_i the first candidate that failed (G_i = V_i when every candidate passed; the kept set
A_i ⊆ G_i). Then U_{i+1} = U_i \\ G_i: the queries between the kept threshold and the failed
one (looked at, not kept) go to the crowd, never to a later stage.

Why each stage's test is valid: stage i's decisions (and so G_i) depend on the sample items
in G_1 ∪ … ∪ G_i and their positions only. Given those, the first draw's remaining positions
hold a uniformly random ordered subset of U_{i+1} (a uniformly random permutation, conditioned
on where some of its elements are, orders the rest uniformly). So, given everything the
earlier stages saw, stage i+1's items of V_{i+1} are a simple random sample of V_{i+1} of a
known size; its candidates (a function of V_{i+1}'s confidences and that size) are fixed
before its items are read; its exact hypergeometric test has level δ_{i+1} conditionally,
hence unconditionally, and fixed-sequence testing keeps it there. Summing over the stages
gives δ. (A query the stages did not look at gets no label from the machines. Were the
between-zone passed on, its sample items, already read, would no longer be a random sample.)

An extendable sample's extensions are not read by a cascade: each stage tests the first draw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from genderbias.machine.certification import MAX_CANDIDATES, Certification, certify_threshold
from genderbias.machine.routing_statistics import tied

#: Why a stage may have a floor: a labeller with coarse confidence (the rules: four levels) that
#: fails at its lowest level has read every query it labelled, and none could go on. With a floor
#: (``rules:0.8``: only what it is at least 0.8 sure of), what lies below goes on unread.
FLOORS = (
    "a stage whose test fails at a confidence level has read that level's sample queries, so the queries between "
    "what it keeps and that level go to the crowd, not to the next labeller; give a coarse labeller a floor "
    "(labeller:0.8) so that what lies below it goes on unread"
)


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
    """The cascade on one blind sample; see the module docstring.

    ``confidence`` ``[m, N]``: labeller i's confidence of each routable query (NaN: no label from
    it); ``correct`` ``[m, N]``: whether labeller i's label equals the reference label (read on
    sample items only); ``sample``: population indices in draw order, the first ``planned`` the
    first draw (default: all). ``floors``: per labeller, the lowest confidence it may keep (None:
    any); the queries below its floor go on to the next labeller unread (see :data:`FLOORS`).
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

"""The echo check: does a worker of a blind sample follow the machine more than people do? Pure module; why and
how it is reviewed: docs/prelabelling.md, "The echo check".

Per answer on a sampled query with the machine's label and another person's answer, x = [label = machine's] −
(share of the other people there who gave the same label); a worker is flagged when their mean exceeds everyone
else's by a one-sided z (Welch's standard error) of at least ``z``. The flagged leave the baseline and the test
runs again until no one more is flagged (a fifth of a crowd copying would otherwise raise the baseline).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

__all__ = ["ECHO_Z", "MIN_ANSWERS", "WorkerEcho", "echo_check"]

#: One-sided z a worker's excess agreement with the machine must reach to be flagged (p ≈ 0.001 for one
#: worker: a sample has a few dozen, so an honest crowd flags none in most studies).
ECHO_Z = 3.0
#: Fewer comparable answers than this and a worker is never flagged (their mean is too rough).
MIN_ANSWERS = 20
#: The most rounds of flagging and re-testing against the narrowed baseline.
MAX_ROUNDS = 10


@dataclass(frozen=True)
class WorkerEcho:
    """One worker's answers against the machine and against the people on the same queries."""

    worker: str
    answers: int  #: answers on queries with the machine's label and at least one other person's
    with_machine: float | None  #: share of them equal to the machine's label
    with_people: float | None  #: mean share of the other people on the query who gave the same label
    excess: float | None  #: (with_machine − with_people) minus the baseline's (everyone not flagged)
    z: float | None  #: the excess over its standard error
    flagged: bool

    def as_dict(self) -> dict:
        return asdict(self)


def _moments(count: float, total: float, squares: float) -> tuple[float, float]:
    """Mean and sample variance from a count, a sum and a sum of squares."""
    mean = total / count
    var = max(squares - count * mean * mean, 0.0) / (count - 1) if count > 1 else 0.0
    return mean, var


def echo_check(
    votes: Iterable[tuple[str, str, str]],
    machine: Mapping[str, str],
    *,
    z: float = ECHO_Z,
    min_answers: int = MIN_ANSWERS,
) -> list[WorkerEcho]:
    """Every worker of ``votes`` (``(item, worker, label)``, one answer per worker and item: the last
    counts) against ``machine`` (``item -> label``), by worker name; see the module docstring."""
    last: dict[tuple[str, str], str] = {}
    for item, worker, label in votes:
        last[(str(item), str(worker))] = str(label)
    by_item: dict[str, Counter] = defaultdict(Counter)
    for (item, _worker), label in last.items():
        by_item[item][label] += 1
    per_worker: dict[str, list[float]] = defaultdict(list)
    machine_hits: dict[str, list[int]] = defaultdict(list)
    people_hits: dict[str, list[float]] = defaultdict(list)
    for (item, worker), label in sorted(last.items()):
        counts = by_item[item]
        others = sum(counts.values()) - 1
        per_worker.setdefault(worker, [])
        if item not in machine or others < 1:
            continue
        same_people = (counts[label] - 1) / others
        same_machine = int(label == machine[item])
        per_worker[worker].append(same_machine - same_people)
        machine_hits[worker].append(same_machine)
        people_hits[worker].append(same_people)

    sums = {w: (len(xs), sum(xs), sum(x * x for x in xs)) for w, xs in per_worker.items()}
    flagged: set[str] = set()
    results: dict[str, tuple[float | None, float | None]] = {}
    for _round in range(MAX_ROUNDS):
        base = [sum(parts) for parts in zip(*(sums[w] for w in sums if w not in flagged), strict=True)] or [0, 0, 0]
        results = {}
        for worker, (count, total, squares) in sums.items():
            own = (0, 0.0, 0.0) if worker in flagged else (count, total, squares)
            rest = [b - o for b, o in zip(base, own, strict=True)]
            if count < 2 or rest[0] < 2:
                results[worker] = (None, None)
                continue
            mean, var = _moments(count, total, squares)
            rest_mean, rest_var = _moments(*rest)
            excess = mean - rest_mean
            se = math.sqrt(var / count + rest_var / rest[0])
            score = excess / se if se > 0 else (math.inf if excess > 0 else 0.0)
            results[worker] = (excess, score)
        now = {w for w, (_, score) in results.items() if score is not None and score >= z and sums[w][0] >= min_answers}
        if now == flagged:
            break
        flagged = now
    return [
        WorkerEcho(
            worker=worker,
            answers=len(xs),
            with_machine=sum(machine_hits[worker]) / len(xs) if xs else None,
            with_people=sum(people_hits[worker]) / len(xs) if xs else None,
            excess=results[worker][0],
            z=None if results[worker][1] is None else min(results[worker][1], 99.0),
            flagged=worker in flagged,
        )
        for worker, xs in sorted(per_worker.items())
    ]

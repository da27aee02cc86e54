"""Grouping a batch's queries into HITs, with gold questions at random positions. Pure. Queries are
shuffled (seeded) so that a HIT holds no run of similar queries (a pool lists each ranker's most biased
queries together); the same seed and sizes always give the same HITs."""

from __future__ import annotations

import random

#: One place on a HIT page: ``("query", i)`` is the batch's i-th query, ``("gold", j)`` its j-th gold query.
Slot = tuple[str, int]


def group_into_hits(queries: int, gold: int, *, queries_per_hit: int, gold_per_hit: int, seed: int) -> list[list[Slot]]:
    """The HITs of a batch of ``queries`` queries and ``gold`` gold queries, each a list of slots in page order."""
    if queries_per_hit < 1:
        raise ValueError("queries_per_hit must be at least 1")
    rng = random.Random(seed)
    order = list(range(queries))
    rng.shuffle(order)
    gold_cycle = list(range(gold))
    rng.shuffle(gold_cycle)
    next_gold = 0
    hits: list[list[Slot]] = []
    for start in range(0, len(order), queries_per_hit):
        members: list[Slot] = [("query", i) for i in order[start : start + queries_per_hit]]
        for _ in range(gold_per_hit if gold_cycle else 0):
            members.insert(rng.randrange(len(members) + 1), ("gold", gold_cycle[next_gold % len(gold_cycle)]))
            next_gold += 1
        hits.append(members)
    return hits

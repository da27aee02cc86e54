"""Grouping queries into HITs (annotation.crowd.hit_groups): every query once, gold mixed in, seeded."""

from annotation.crowd.hit_groups import group_into_hits


def test_every_query_lands_in_exactly_one_hit_of_at_most_the_size():
    hits = group_into_hits(23, 0, queries_per_hit=5, gold_per_hit=0, seed=3)
    assert [len(h) for h in hits] == [5, 5, 5, 5, 3]
    assert sorted(i for h in hits for _, i in h) == list(range(23))


def test_gold_questions_cycle_through_every_hit():
    hits = group_into_hits(6, 3, queries_per_hit=3, gold_per_hit=2, seed=0)
    assert [sum(kind == "gold" for kind, _ in h) for h in hits] == [2, 2]
    golds = [i for h in hits for kind, i in h if kind == "gold"]
    assert sorted(golds[:3]) == [0, 1, 2]  # each gold query once before any repeats
    assert all(len(h) == 5 for h in hits)


def test_the_same_seed_gives_the_same_hits_and_another_seed_shuffles():
    first = group_into_hits(40, 2, queries_per_hit=10, gold_per_hit=1, seed=7)
    assert first == group_into_hits(40, 2, queries_per_hit=10, gold_per_hit=1, seed=7)
    assert first != group_into_hits(40, 2, queries_per_hit=10, gold_per_hit=1, seed=8)
    assert [i for kind, i in first[0] if kind == "query"] != list(range(10))  # shuffled, not in pool order


def test_no_gold_queries_means_no_gold_slots():
    assert all(
        kind == "query" for h in group_into_hits(5, 0, queries_per_hit=2, gold_per_hit=3, seed=1) for kind, _ in h
    )

"""RBO_ext (Webber et al. 2010, Eq. 32) on hand-computed lists, and the vectorised table against it."""

import random
from collections.abc import Sequence

import polars as pl
import pytest

from genderbias.ranking.rbo import crbo, rbo_table


def rank_biased_overlap(first: Sequence, second: Sequence, p: float = 0.9, depth: int | None = None) -> float:
    """RBO_ext of two ranked lists (no repeated items), each cut at ``depth`` if given: a plain, loop-per-depth
    Eq. 32, the reference the vectorised ``rbo_table`` is tested against."""
    a = list(first)[:depth] if depth else list(first)
    b = list(second)[:depth] if depth else list(second)
    if not a or not b:
        return 1.0 if not a and not b else 0.0
    longer, shorter = (a, b) if len(a) >= len(b) else (b, a)
    big, s = len(longer), len(shorter)
    x = [len(set(longer[:d]) & set(shorter[:d])) for d in range(1, big + 1)]
    x_s, x_l = x[s - 1], x[big - 1]
    total = sum(x[d - 1] / d * p**d for d in range(1, big + 1))
    total += sum(x_s * (d - s) / (s * d) * p**d for d in range(s + 1, big + 1))
    return (1 - p) / p * total + ((x_l - x_s) / big + x_s / s) * p**big


def run_frame(rankings):
    rows = [(qid, doc, rank) for qid, docs in rankings.items() for rank, doc in enumerate(docs, start=1)]
    return pl.DataFrame(rows, schema={"qid": pl.String, "docid": pl.String, "rank": pl.Int32}, orient="row")


def test_identical_lists_score_one():
    assert rank_biased_overlap(list("abcdefghij"), list("abcdefghij"), p=0.9) == pytest.approx(1.0, abs=1e-12)


def test_even_lists_by_hand():
    # X_1 = 0, X_2 = 2, X_3 = 2
    p = 0.9
    expected = (1 - p) / p * (0 / 1 * p + 2 / 2 * p**2 + 2 / 3 * p**3) + 2 / 3 * p**3
    assert rank_biased_overlap(["a", "b", "c"], ["b", "a", "d"], p=p) == pytest.approx(expected, abs=1e-12)


def test_uneven_lists_by_hand():
    # L = a b c d, S = b e: l = 4, s = 2, X_1..X_4 = 0, 1, 1, 1; X_s = 1, X_l = 1
    p = 0.9
    first = 0 / 1 * p + 1 / 2 * p**2 + 1 / 3 * p**3 + 1 / 4 * p**4
    extra = 1 * (3 - 2) / (2 * 3) * p**3 + 1 * (4 - 2) / (2 * 4) * p**4
    expected = (1 - p) / p * (first + extra) + ((1 - 1) / 4 + 1 / 2) * p**4
    assert rank_biased_overlap(list("abcd"), list("be"), p=p) == pytest.approx(expected, abs=1e-12)
    assert rank_biased_overlap(list("be"), list("abcd"), p=p) == pytest.approx(expected, abs=1e-12)


def test_disjoint_lists_score_zero():
    assert rank_biased_overlap(list("abc"), list("xyz")) == 0.0


def test_p_must_be_below_one():
    # the rbo package defaults to p = 1.0, where the measure degenerates; we refuse it
    with pytest.raises(ValueError):
        rbo_table(run_frame({"1": ["a", "b"]}), run_frame({"1": ["a", "b"]}), p=1.0)


def test_table_matches_the_plain_version_on_random_lists():
    rng = random.Random(7)
    first, second = {}, {}
    for q in range(60):
        docs = [f"d{i}" for i in range(25)]
        first[str(q)] = rng.sample(docs, rng.randint(1, 14))
        second[str(q)] = rng.sample(docs, rng.randint(1, 14))
    table = rbo_table(run_frame(first), run_frame(second), p=0.9, depth=10)
    for qid, value in table.items():
        assert value == pytest.approx(rank_biased_overlap(first[qid], second[qid], p=0.9, depth=10), abs=1e-12)


def test_crbo_averages_common_queries_only():
    original = run_frame({"1": list("abc"), "2": list("abc"), "3": list("abc")})
    counterfactual = run_frame({"1": list("abc"), "2": list("bad")})  # query 3 missing
    p = 0.9
    q2 = (1 - p) / p * (0 * p + 1 * p**2 + 2 / 3 * p**3) + 2 / 3 * p**3
    mean, queries, per_query = crbo(original, counterfactual, p=p, depth=10)
    assert queries == 2
    assert per_query["1"] == pytest.approx(1.0, abs=1e-12)
    assert mean == pytest.approx((1.0 + q2) / 2, abs=1e-12)

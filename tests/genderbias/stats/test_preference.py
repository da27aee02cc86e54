"""Paired-variant preference on a hand-made run."""

import polars as pl

from genderbias.stats.preference import split_versions, variant_preference


def test_preference_counts_wins_ties_and_incomplete_cases():
    run = pl.DataFrame(
        {
            "qid": ["1"] * 3 + ["2"] * 3 + ["3"] * 3 + ["4"] * 2,
            "docid": ["7-m", "7-f", "7-n", "7-m", "7-f", "7-n", "9-m", "9-f", "9-n", "5-m", "5-f"],
            "score": [3.0, 2.0, 1.0, 1.0, 2.0, 0.5, 2.0, 2.0, 1.0, 9.0, 1.0],
        }
    )
    result = variant_preference(split_versions(run))
    # q1: m wins; q2: f wins; q3: m and f tie; q4 lacks the neutral version
    assert (result.cases, result.ties, result.incomplete) == (4, 1, 1)
    assert result.wins == {"m": 1, "f": 1, "n": 0}
    assert result.fraction("m") == 0.5 and result.fraction("n") == 0.0


def test_split_versions_uses_the_last_separator():
    run = pl.DataFrame({"qid": ["1", "1"], "docid": ["a-b-f", "other"], "score": [1.0, 2.0]})
    frame = split_versions(run)
    assert frame[["item", "version"]].values.tolist() == [["a-b", "f"]]

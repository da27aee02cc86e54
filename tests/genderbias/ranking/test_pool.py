"""RaB/ARaB on hand-computed examples, and pooling on a small hand-checked example."""

import math

import pandas as pd
import polars as pl
import pytest

from genderbias.ranking.measures import rank_bias
from genderbias.ranking.pool import pool_queries, sort_qids


def run_frame(rankings: dict[str, list[str]]) -> pl.DataFrame:
    rows = [(qid, doc, rank) for qid, docs in rankings.items() for rank, doc in enumerate(docs, start=1)]
    return pl.DataFrame(rows, schema={"qid": pl.String, "docid": pl.String, "rank": pl.Int32}, orient="row")


MAGS = pl.DataFrame(
    {
        #        f     m
        "docid": ["a", "b", "c", "d"],
        "f": [1.0, 0.0, 0.0, 2.0],
        "m": [0.0, 1.0, 3.0, 0.0],
    }
)


def rank_bias_table(run: pl.DataFrame, magnitudes: pl.DataFrame, cutoffs: list[int]) -> pd.DataFrame:
    """The library's RaB with the magnitudes given as they are (``tc``) and the run's stored order."""
    return rank_bias(run, magnitudes.with_columns(length=pl.lit(0)), cutoffs, "tc", ties="file")


def test_rab_and_arab_by_hand():
    # Query 1 ranks a, b, c: m - f = -1, 1, 3.
    table = rank_bias_table(run_frame({"1": ["a", "b", "c"]}), MAGS, [1, 2, 3])
    assert table.loc["1", "RaB@1"] == pytest.approx(-1.0)
    assert table.loc["1", "RaB@2"] == pytest.approx(0.0)  # (-1 + 1) / 2
    assert table.loc["1", "RaB@3"] == pytest.approx(1.0)  # (-1 + 1 + 3) / 3
    assert table.loc["1", "ARaB@3"] == pytest.approx((-1.0 + 0.0 + 1.0) / 3)


def test_fewer_documents_than_the_cutoff():
    # Query 2 ranks only d, b: m - f = -2, 1. RaB@10 = RaB@2 = -0.5; ARaB@10 = (-2 + -0.5) / 2.
    table = rank_bias_table(run_frame({"2": ["d", "b"]}), MAGS, [10])
    assert table.loc["2", "RaB@10"] == pytest.approx(-0.5)
    assert table.loc["2", "ARaB@10"] == pytest.approx(-1.25)
    assert table.loc["2", "n"] == 2


def test_tf_magnitudes_from_counts():
    counts = pl.DataFrame({"docid": ["x"], "f": [3], "m": [1]})
    mags = counts.select("docid", pl.col("f").cast(pl.Float64).log1p(), pl.col("m").cast(pl.Float64).log1p())
    table = rank_bias_table(run_frame({"q": ["x"]}), mags, [10])
    assert table.loc["q", "RaB@10"] == pytest.approx(math.log(2) - math.log(4))


def test_document_without_magnitude_counts_as_neutral():
    table = rank_bias_table(run_frame({"q": ["unknown", "c"]}), MAGS, [2])
    assert table.loc["q", "RaB@2"] == pytest.approx(1.5)


def test_queries_sorted_numerically_when_integers():
    assert sort_qids(["10", "9", "100"]) == ["9", "10", "100"]
    assert sort_qids(["b", "a10", "a9"]) == ["a10", "a9", "b"]


def chosen(result, run, list_name):
    """The qids one list of one run selected, in list order."""
    return result.selections.filter(run=run, list=list_name).sort("position")["qid"].to_list()


def test_pool_by_hand():
    run1 = pd.Series({"1": -0.5, "2": 0.3, "3": 0.0, "4": -0.5, "10": 0.9})
    run2 = pd.Series({"1": 0.2, "5": -1.0, "3": 0.7})
    result = pool_queries({"r1": run1, "r2": run2}, depth=2)
    sel = result.selections
    picked = {(run, name): chosen(result, run, name) for run, name in sel.select("run", "list").unique().iter_rows()}
    # r1 female: -0.5 (qids 1 and 4 tie: smaller qid first), then 1 is before 4.
    assert picked[("r1", "female")] == ["1", "4"]
    assert picked[("r1", "male")] == ["10", "2"]
    assert picked[("r2", "female")] == ["5", "1"]
    assert picked[("r2", "male")] == ["3", "1"]
    assert result.qids == ["1", "2", "3", "4", "5", "10"]
    assert sel.filter(run="r1", list="male", qid="2")["position"].item() == 2


def test_pool_ties_numeric_not_lexicographic():
    run = pd.Series({"10": 0.0, "9": 0.0, "100": 0.0})
    result = pool_queries({"r": run}, depth=2)
    female = chosen(result, "r", "female")
    assert female == ["9", "10"]


def test_pool_depth_must_be_positive():
    with pytest.raises(ValueError):
        pool_queries({"r": pd.Series({"1": 0.0})}, depth=0)


def test_rab_equal_to_12_decimals_is_a_tie_broken_by_qid():
    # 0.1 + 0.2 and 0.3 differ in their last bit only; -(0.1 + 0.2) and -0.3 likewise.
    noisy, exact = 0.1 + 0.2, 0.3
    assert noisy != exact and round(noisy, 12) == round(exact, 12)
    run = pd.Series({"10": noisy, "9": exact, "2": -noisy, "3": -exact, "1": 0.0})
    result = pool_queries({"r": run}, depth=1)
    assert chosen(result, "r", "male") == ["9"]  # not "10", whose bits are larger
    assert chosen(result, "r", "female") == ["2"]  # -0.30000000000000004 is no more female than -0.3
    assert result.qids == ["2", "9"]


def test_values_differing_beyond_noise_are_not_ties():
    run = pd.Series({"1": 0.3, "2": 0.3 + 1e-9})
    result = pool_queries({"r": run}, depth=1)
    assert chosen(result, "r", "male") == ["2"]

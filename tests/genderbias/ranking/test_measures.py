"""NFaiRR, TExFAIR and RaB/ARaB on hand-computed examples (expected values written out from the definitions)."""

import math

import polars as pl
import pytest

from genderbias.ranking import measures, nfairr
from genderbias.stats.significance import summarise


def log2(x):
    return math.log(x) / math.log(2)


W = [1 / log2(r + 1) for r in range(1, 11)]  # w_1 = 1, w_2 = 1/log2 3, ...


def run_frame(rankings):
    rows = [(qid, doc, rank) for qid, docs in rankings.items() for rank, doc in enumerate(docs, start=1)]
    return pl.DataFrame(rows, schema={"qid": pl.String, "docid": pl.String, "rank": pl.Int32}, orient="row")


COUNTS = pl.DataFrame(
    {
        "docid": ["a", "b", "c", "d", "e", "g"],
        "f": [2, 0, 1, 0, 1, 3],
        "m": [0, 3, 1, 0, 0, 1],
        "length": [10, 6, 4, 5, 2, 8],
    }
)
# ω (τ = 1): a one-sided → 0; b → 0; c balanced → 1; d none → 1; e a single word (≤ τ) → 1;
# g 3 f + 1 m → 1 − (|3/4 − 1/2| + |1/4 − 1/2|) = 0.5; "x" is not in the collection → neutral.
RUN = run_frame({"1": ["a", "b", "c", "d"], "2": ["e", "x"], "3": ["d"]})


def test_neutrality_of_single_documents():
    omega = nfairr.neutrality([2, 0, 1, 0, 1, 3, 2], [0, 3, 1, 0, 0, 1, 0], threshold=1)
    assert list(omega) == [0.0, 0.0, 1.0, 1.0, 1.0, 0.5, 0.0]
    # τ = 2 makes the two-word document a neutral one
    assert nfairr.neutrality([2], [0], threshold=2)[0] == 1.0


def test_nfairr_against_the_collection():
    table = nfairr.nfairr(RUN, COUNTS, [2, 4])
    ideal4 = W[0] + W[1] + W[2] + W[3]
    assert table.loc["1", "NFaiRR@2"] == pytest.approx(0.0, abs=1e-12)  # a, b both one-sided
    assert table.loc["1", "FaiRR@4"] == pytest.approx(W[2] + W[3], abs=1e-9)
    assert table.loc["1", "NFaiRR@4"] == pytest.approx((1 / log2(4) + 1 / log2(5)) / ideal4, abs=1e-9)
    # fewer documents than the cutoff: the collection still offers 4 neutral ones, so the ideal has 4 terms
    assert table.loc["2", "NFaiRR@4"] == pytest.approx((1 + 1 / log2(3)) / ideal4, abs=1e-9)
    assert table.loc["3", "NFaiRR@4"] == pytest.approx(1 / ideal4, abs=1e-9)
    assert table.loc["2", "NFaiRR@2"] == pytest.approx(1.0, abs=1e-12)  # e (one word) and x (missing) are neutral


def test_nfairr_with_a_partly_neutral_document():
    table = nfairr.nfairr(run_frame({"1": ["g", "c"]}), COUNTS, [2])
    assert table.loc["1", "NFaiRR@2"] == pytest.approx((0.5 + 1 / log2(3)) / (1 + 1 / log2(3)), abs=1e-9)


def test_nfairr_with_a_background_run():
    # run a, c; background b: the ideal orders {a, c, b} by ω = [1, 0, 0]
    table = nfairr.nfairr(run_frame({"1": ["a", "c"]}), COUNTS, [2], background=run_frame({"1": ["b"]}))
    assert table.loc["1", "NFaiRR@2"] == pytest.approx((0 + 1 / log2(3)) / (1 + 0), abs=1e-9)


def test_nfairr_background_includes_the_runs_own_documents_so_never_exceeds_one():
    # The background alone (a, b) has ideal 0; the reference code divided by it. Ours: {c, d, a, b} → [1, 1, 0, 0].
    table = nfairr.nfairr(run_frame({"1": ["c", "d"]}), COUNTS, [2], background=run_frame({"1": ["a", "b"]}))
    assert table.loc["1", "NFaiRR@2"] == pytest.approx(1.0, abs=1e-12)


# The issue's example: a background of 10 documents of neutrality 0.5 (1 f + 3 m words each);
# X2 differs from X1 only by a fully neutral document "z" (outside the background) at rank 10.
HALF = pl.DataFrame(
    {
        "docid": [f"h{i}" for i in range(10)] + ["z"],
        "f": [1] * 10 + [0],
        "m": [3] * 10 + [0],
        "length": [10] * 11,
    }
)
BACKGROUND_HALF = run_frame({"1": [f"h{i}" for i in range(10)]})
X1 = run_frame({"1": [f"h{i}" for i in range(10)]})
X2 = run_frame({"1": [f"h{i}" for i in range(9)] + ["z"]})
S10 = sum(W)


def test_issue_example_fairrs():
    half = 0.5 * S10
    assert half == pytest.approx(2.2718, abs=1e-4)
    assert 0.5 * S10 + 0.5 * W[9] == pytest.approx(2.4163, abs=1e-4)
    x1 = nfairr.nfairr(X1, HALF, [10], background=BACKGROUND_HALF)
    assert x1.loc["1", "FaiRR@10"] == pytest.approx(0.5 * S10, abs=1e-12)


def test_nfairr_per_run_normaliser_was_not_monotone():
    # Without the other run of the comparison, X2's own neutral document raises its ideal: 0.872 < 1.
    alone = nfairr.nfairr(X2, HALF, [10], background=BACKGROUND_HALF)
    assert alone.loc["1", "NFaiRR@10"] == pytest.approx(0.872, abs=1e-3)


def test_nfairr_comparison_normaliser_is_monotone_and_at_most_one():
    comparison = [X1, X2]
    x1 = nfairr.nfairr(X1, HALF, [10], background=BACKGROUND_HALF, comparison=comparison)
    x2 = nfairr.nfairr(X2, HALF, [10], background=BACKGROUND_HALF, comparison=comparison)
    ideal = 1.0 * W[0] + 0.5 * (S10 - W[0])  # z first, then nine of the ω = 0.5 documents
    assert x1.loc["1", "NFaiRR@10"] == pytest.approx(0.5 * S10 / ideal, abs=1e-12)
    assert x2.loc["1", "NFaiRR@10"] == pytest.approx((0.5 * S10 + 0.5 * W[9]) / ideal, abs=1e-12)
    assert x1.loc["1", "NFaiRR@10"] < x2.loc["1", "NFaiRR@10"] <= 1.0


def test_nfairr_exact_normaliser_is_the_original_definition():
    x1 = nfairr.nfairr(X1, HALF, [10], background=BACKGROUND_HALF, normaliser="exact")
    x2 = nfairr.nfairr(X2, HALF, [10], background=BACKGROUND_HALF, normaliser="exact", comparison=[X1])
    assert x1.loc["1", "NFaiRR@10"] == pytest.approx(1.0, abs=1e-12)
    # The background alone is the denominator (comparison ignored): above 1, reported as such.
    assert x2.loc["1", "NFaiRR@10"] == pytest.approx((0.5 * S10 + 0.5 * W[9]) / (0.5 * S10), abs=1e-12)
    # A query the background lacks: IFaiRR = 0, undefined.
    lacking = nfairr.nfairr(run_frame({"2": ["z"]}), HALF, [1], background=BACKGROUND_HALF, normaliser="exact")
    assert math.isnan(lacking.loc["2", "NFaiRR@1"])


def test_nfairr_variant_names_the_normaliser():
    assert nfairr.nfairr_variant("collection", "exact") == "collection"
    assert nfairr.nfairr_variant("bm25", "comparison") == "bm25"
    assert nfairr.nfairr_variant("bm25", "exact") == "bm25:exact"
    with pytest.raises(ValueError, match="normaliser"):
        nfairr.nfairr(X1, HALF, [10], background=BACKGROUND_HALF, normaliser="own")


def test_nfairr_undefined_when_every_candidate_is_one_sided():
    table = nfairr.nfairr(run_frame({"1": ["a"]}), COUNTS, [1], background=run_frame({"1": ["b"]}))
    assert math.isnan(table.loc["1", "NFaiRR@1"])


def test_texfair_by_hand():
    table = measures.texfair(RUN, COUNTS, [3, 4])
    te_f = 2 / 10 * 1 + 0 + 1 / 4 * (1 / log2(4))
    te_m = 0 + 3 / 6 * (1 / log2(3)) + 1 / 4 * (1 / log2(4))
    p_f = te_f / (te_f + te_m)
    ted = abs(p_f - 0.5) + abs((1 - p_f) - 0.5)
    assert table.loc["1", "TED@3"] == pytest.approx(ted, abs=1e-9)
    # all top-3 documents have a list word: RBDF@3 = 1
    assert table.loc["1", "TExFAIR@3"] == pytest.approx(1 - ted * 1.0, abs=1e-9)
    rbdf4 = (1 + 1 / log2(3) + 1 / log2(4)) / (1 + 1 / log2(3) + 1 / log2(4) + 1 / log2(5))
    assert table.loc["1", "RBDF@4"] == pytest.approx(rbdf4, abs=1e-9)
    assert table.loc["1", "TExFAIR@4"] == pytest.approx(1 - ted * rbdf4, abs=1e-9)
    assert table.loc["1", "TExFAIR-plain@4"] == pytest.approx(1 - ted, abs=1e-9)


def test_texfair_fewer_documents_and_missing_document():
    table = measures.texfair(RUN, COUNTS, [2, 4])
    # query 2: e (f = 1 of 2 tokens) then x (not in the collection: no exposure, no list word)
    rbdf = (1 * 1 + 0) / (1 + 1 / log2(3))
    assert table.loc["2", "TED@4"] == pytest.approx(1.0, abs=1e-12)
    assert table.loc["2", "TExFAIR@4"] == pytest.approx(1 - 1.0 * rbdf, abs=1e-9)
    assert table.loc["2", "TExFAIR-plain@4"] == pytest.approx(0.0, abs=1e-12)


def test_texfair_without_gendered_words_is_fair():
    table = measures.texfair(RUN, COUNTS, [1, 4])
    assert table.loc["3", "TED@4"] == 0.0
    assert table.loc["3", "TExFAIR@4"] == 1.0
    assert table.loc["3", "TExFAIR-plain@1"] == 1.0


def test_rank_bias_through_pooling_with_tf_and_bool():
    long = measures.evaluate_run(RUN, COUNTS, COUNTS, [2])
    value = long.set_index(["qid", "metric", "variant", "cutoff"])["value"]
    rab1 = math.log(1 + 0) - math.log(1 + 2)  # a: m − f magnitudes
    rab2 = (rab1 + (math.log(1 + 3) - math.log(1 + 0))) / 2  # + b
    assert value[("1", "RaB", "tf", 2)] == pytest.approx(rab2, abs=1e-9)
    assert value[("1", "ARaB", "tf", 2)] == pytest.approx((rab1 + rab2) / 2, abs=1e-9)
    assert value[("1", "RaB", "bool", 2)] == pytest.approx((-1 + 1) / 2, abs=1e-12)
    assert value[("1", "ARaB", "bool", 2)] == pytest.approx((-1 + 0) / 2, abs=1e-12)
    # query 3 has one document (no gendered word): RaB@2 = RaB@1 = 0
    assert value[("3", "RaB", "tf", 2)] == 0.0
    assert set(long["metric"]) == {"RaB", "ARaB", "NFaiRR", "TExFAIR", "AWRF", "rKL", "rND", "rRD", "EE", "GFR"}
    assert set(long.loc[long["metric"] == "TExFAIR", "variant"]) == {"rbdf", "plain"}


def test_rows_are_taken_in_rank_order_and_renumbered():
    # rows out of order; rank 2 was removed (e.g. a filtered document): c, a behave like ranks 1, 2
    frame = pl.DataFrame({"qid": ["1", "1", "1"], "docid": ["b", "a", "c"], "rank": [4, 3, 1]})
    table = nfairr.nfairr(frame, COUNTS, [2, 3])
    assert table.loc["1", "NFaiRR@2"] == pytest.approx(1 / (1 + 1 / log2(3)), abs=1e-9)
    assert table.loc["1", "n"] == 2  # b (rank 4) is beyond the largest cutoff


def test_means_count_only_the_queries_a_run_has():
    long = measures.evaluate_run(run_frame({"1": ["a"], "2": ["c"]}), COUNTS, COUNTS, [1])
    long.insert(0, "run", "r")
    means = summarise(long, samples=10)
    row = means[(means["metric"] == "NFaiRR")].iloc[0]
    assert row["queries"] == 2  # query 3 of the set is absent from the run: mean over 2 queries
    assert row["value"] == pytest.approx((0.0 + 1.0) / 2, abs=1e-12)


def test_bad_cutoffs():
    with pytest.raises(ValueError):
        nfairr.nfairr(RUN, COUNTS, [0, 5])


def test_the_pipeline_reads_what_the_figures_need_and_summarises_by_hand():
    """:func:`measures.evaluate`, a report's one pipeline: counts asked once per word list for the top
    documents only, NFaiRR@2's means by hand (over every query, then over a subset), effectiveness beside
    them with the field's conventions (an unreturned judged query counts 0, an unjudged one is left out)."""
    asked = []

    def counts(docids, wordlist, tokenizer):
        asked.append(sorted(docids.to_list()))
        return COUNTS.filter(pl.col("docid").is_in(docids.to_list()))

    qrels = pl.DataFrame({"qid": ["1", "3", "4"], "docid": ["b", "d", "a"], "rel": [1, 1, 1]})
    found = measures.evaluate(
        {"r": RUN}, counts, [2], qids=["1", "2", "3", "4"], qrels=qrels, judged_by="j", measures=["RR@10"], samples=50
    )
    assert asked == [["a", "b", "d", "e", "x"]] * 2  # definitional, then representative; c (rank 3) is not read
    summary = found.summary.set_index(["metric", "variant", "cutoff"])
    nfairr_q3 = 1 / (1 + W[1])  # d alone, neutral; the collection offers two neutral documents
    assert summary.loc[("NFaiRR", "collection", 2), "value"] == pytest.approx((0.0 + 1.0 + nfairr_q3) / 3)
    assert summary.loc[("RR", "j", 10), "value"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)  # q2 unjudged
    assert summary.loc[("RR", "j", 10), "queries"] == 3
    assert (found.unjudged, found.unreturned) == (["2"], {"r": ["4"]})
    subset = measures.evaluate({"r": RUN}, counts, [2], in_set={"1", "2"}, samples=50).summary
    assert subset.set_index(["metric", "variant", "cutoff"]).loc[("NFaiRR", "collection", 2), "value"] == 0.5

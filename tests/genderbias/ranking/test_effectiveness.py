"""Effectiveness with ir_measures: per-query values checked against the definitions by hand and
against pytrec_eval (trec_eval's code) itself; queries without judgments are reported, not dropped."""

import math

import pandas as pd
import polars as pl
import pytest

from genderbias.ranking import effectiveness as eff

# Graded judgments. q1: three relevant documents (gains 2, 1, 3; dD never retrieved) and one
# judged non-relevant; q2: one relevant, never retrieved; q4: judged, nothing relevant;
# q3 is in the run but not judged at all.
QRELS = pl.DataFrame(
    {
        "qid": ["q1", "q1", "q1", "q1", "q2", "q4"],
        "docid": ["dA", "dB", "dC", "dD", "dX", "dA"],
        "rel": [2, 1, 0, 3, 1, 0],
    }
)
# Ranks as the project normalised them (score order or file order): the library must use them.
RUN = pl.DataFrame(
    {
        "qid": ["q1", "q1", "q1", "q1", "q2", "q2", "q3", "q4"],
        "docid": ["dC", "dB", "dA", "dE", "dY", "dZ", "dA", "dA"],
        "rank": [1, 2, 3, 4, 1, 2, 1, 1],
    }
)
MEASURES = ["MRR@10", "nDCG@10", "nDCG@2", "R@10", "P@10", "AP@10"]

# q1 by hand (relevant: rel >= 1; ranks 1..4 hold dC(0), dB(1), dA(2), dE(unjudged = 0)):
#   RR@10   = 1/rank of the first relevant = 1/2                                       = 0.5
#   P@10    = relevant in the top 10 / 10 = 2/10                                       = 0.2
#   R@10    = relevant retrieved in the top 10 / relevant judged = 2/3                 = 0.6666666666666666
#   AP@10   = (P@2 + P@3) / relevant judged = (1/2 + 2/3) / 3                          = 0.38888888888888884
#   nDCG@10 = DCG / IDCG, gain = rel, discount log2(rank + 1) (trec_eval's ndcg_cut):
#             DCG  = 0/log2(2) + 1/log2(3) + 2/log2(4) + 0 = 1.6309297535714575
#             IDCG = 3/log2(2) + 2/log2(3) + 1/log2(4)     = 4.7618595071429150
#                                                                                      = 0.3424985031845269
#   nDCG@2  = (1/log2(3)) / (3 + 2/log2(3))                                            = 0.1480409554829326
# q2 and q4: judged, nothing relevant retrieved: every measure 0. q3: no judgments: NaN.
EXPECTED_Q1 = {
    ("RR", 10): 0.5,
    ("nDCG", 10): 0.3424985031845269,
    ("nDCG", 2): 0.1480409554829326,
    ("R", 10): 0.6666666666666666,
    ("P", 10): 0.2,
    ("AP", 10): 0.38888888888888884,
}


def _values(frame):
    return {(r.qid, r.metric, r.cutoff): r.value for r in frame.itertuples(index=False)}


def test_per_query_values_match_the_definitions_by_hand():
    frame = eff.effectiveness(RUN, QRELS, MEASURES)
    assert list(frame.columns) == ["qid", "metric", "cutoff", "value"]
    values = _values(frame)
    for (metric, cutoff), expected in EXPECTED_Q1.items():
        assert values[("q1", metric, cutoff)] == pytest.approx(expected, abs=1e-12), (metric, cutoff)
        assert values[("q2", metric, cutoff)] == 0.0
        assert values[("q4", metric, cutoff)] == 0.0
        assert math.isnan(values[("q3", metric, cutoff)])  # listed, not dropped
    assert len(frame) == 4 * len(MEASURES)  # every query of the run, every measure
    # The run's mean skips the unjudged query: MRR@10 = (0.5 + 0 + 0) / 3.
    mrr = frame[frame["metric"] == "RR"]["value"]
    assert mrr.mean() == pytest.approx(0.5 / 3) and mrr.notna().sum() == 3


def test_values_match_pytrec_eval_itself():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels = {}
    for qid, docid, rel in QRELS.iter_rows():
        qrels.setdefault(qid, {})[docid] = rel
    run = {}
    for qid, docid, rank in RUN.iter_rows():
        run.setdefault(qid, {})[docid] = float(-rank)
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, {"recip_rank", "ndcg_cut.2,10", "recall.10", "P.10", "map_cut.10"}
    )
    reference = evaluator.evaluate(run)
    assert "q3" not in reference  # trec_eval skips the unjudged query silently; we list it
    names = {
        ("RR", 10): "recip_rank",
        ("nDCG", 10): "ndcg_cut_10",
        ("nDCG", 2): "ndcg_cut_2",
        ("R", 10): "recall_10",
        ("P", 10): "P_10",
        ("AP", 10): "map_cut_10",
    }
    values = _values(eff.effectiveness(RUN, QRELS, MEASURES))
    for qid, measures in reference.items():
        for key, trec_name in names.items():
            assert values[(qid, *key)] == pytest.approx(measures[trec_name], abs=1e-12), (qid, key)
    assert reference["q1"]["ndcg_cut_10"] == pytest.approx(EXPECTED_Q1[("nDCG", 10)], abs=1e-12)


def test_the_projects_rank_is_evaluated_not_a_resort_by_docid():
    # Same documents, reversed ranks: RR follows the given rank.
    run = pl.DataFrame({"qid": ["q1", "q1"], "docid": ["dB", "dC"], "rank": [2, 1]})
    assert _values(eff.effectiveness(run, QRELS, ["RR@10"]))[("q1", "RR", 10)] == 0.5
    # pandas frames work too, and a judgment-free run gives NaN everywhere.
    frame = eff.effectiveness(run.to_pandas(), QRELS.filter(pl.col("qid") == "q2").to_pandas(), ["RR@10"])
    assert frame["value"].isna().all() and isinstance(frame, pd.DataFrame)


def test_measure_names():
    assert eff.parse_measures("MRR@10, nDCG@10,R@100,P@5,nDCG@10") == ("RR@10", "nDCG@10", "R@100", "P@5")
    assert eff.measures_depth(["RR@10", "R@100"]) == 100
    for bad in ("nDCG", "ERR@10", "RR(rel=2)@10"):
        with pytest.raises(ValueError, match="unknown measure"):
            eff.parse_measures(bad)
    with pytest.raises(ValueError, match=r"P@0: parameter 'cutoff': must be at least 1"):
        eff.parse_measures("P@0")

"""A run and texts in every shape the field passes them give the same figure, computed here by hand;
a docstore is asked only for the documents the measure reads."""

import math

import pandas as pd
import polars as pl
import pytest

import genderbias

TEXTS = {"a": "He said it.", "b": "She and she", "c": "no gendered word", "z": "never ranked: he he he"}
RUN = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"c": 5.0, "a": 4.0}}


def expected_arab2():
    """ARaB@2 (tf magnitudes, ln(1 + count); m − f per document) by its definition, per query, then the mean."""
    value = {"a": math.log(2), "b": -math.log(3), "c": 0.0}
    q1 = (value["a"] + (value["a"] + value["b"]) / 2) / 2
    q2 = (value["c"] + (value["c"] + value["a"]) / 2) / 2
    return (q1 + q2) / 2


def run_shapes(tmp_path):
    rows = [(q, d, s) for q, docs in RUN.items() for d, s in docs.items()]
    trec = tmp_path / "run.trec"
    ranked = []
    for q, docs in RUN.items():
        ranked += [f"{q} Q0 {d} {r} {s} x\n" for r, (d, s) in enumerate(sorted(docs.items(), key=lambda i: -i[1]), 1)]
    trec.write_text("".join(ranked))
    frame = pd.DataFrame(rows, columns=["qid", "docno", "score"])
    return {
        "dict": RUN,
        "file": trec,
        "file name": str(trec),
        "pandas": frame,
        "polars": pl.from_pandas(frame),
        "ir_measures frame": frame.rename(columns={"qid": "query_id", "docno": "doc_id"}),
        "pyterrier frame with ranks": frame.assign(rank=[1, 2, 3, 1, 2]),
    }


class Docstore:
    """ir_datasets' docstore contract: ``get_many(ids)`` → ``{id: document}``; it records what is asked."""

    def __init__(self, texts):
        self.texts, self.asked = texts, []

    def get_many(self, ids):
        self.asked += list(ids)
        from collections import namedtuple

        doc = namedtuple("GenericDoc", "doc_id text")
        return {i: doc(i, self.texts[i]) for i in ids if i in self.texts}

    def __iter__(self):
        raise AssertionError("the whole collection was scanned")


def text_shapes(tmp_path):
    tsv = tmp_path / "collection.tsv"
    tsv.write_text("".join(f"{d}\t{t}\n" for d, t in TEXTS.items()))
    frame = pd.DataFrame({"docno": list(TEXTS), "text": list(TEXTS.values())})
    return {"dict": TEXTS, "tsv": tsv, "pandas": frame, "polars": pl.from_pandas(frame), "docstore": Docstore(TEXTS)}


def test_every_shape_of_run_and_texts_gives_the_same_figure(tmp_path):
    expected = expected_arab2()
    for name, run in run_shapes(tmp_path).items():
        figure = genderbias.calc_aggregate(["ARaB@2"], run, TEXTS)[genderbias.ARaB @ 2]
        assert figure == pytest.approx(expected), name
        assert figure.low == figure.high == pytest.approx(expected), name  # no tie: no range
    for name, texts in text_shapes(tmp_path).items():
        assert genderbias.calc_aggregate(["ARaB@2"], RUN, texts)["ARaB@2"] == pytest.approx(expected), name


def test_a_docstore_is_asked_only_for_the_ranked_documents(tmp_path):
    store = Docstore(TEXTS)
    genderbias.calc_aggregate(["ARaB@2", "NFaiRR@2"], RUN, store)
    assert sorted(set(store.asked)) == ["a", "b", "c"]
    assert len(store.asked) == len(set(store.asked))  # each fetched once for both measures and word lists


def test_iter_calc_yields_each_query_with_its_tie_range():
    run = {"q1": {"a": 1.0, "b": 1.0}}  # a tie: he-document and she-document in either order
    (metric,) = genderbias.iter_calc(["RaB@1"], run, {"a": "he", "b": "she"})
    assert metric.query_id == "q1" and str(metric.measure) == "RaB@1"
    assert metric.value == pytest.approx(0.0)  # the expectation over both orders
    assert (metric.value.low, metric.value.high) == pytest.approx((-math.log(2), math.log(2)))


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="the run frame has no column score"):
        genderbias.calc_aggregate(["ARaB@2"], pd.DataFrame({"qid": ["1"], "docno": ["a"]}), TEXTS)
    with pytest.raises(ValueError, match="ranks document 'a' twice for query '1'"):
        genderbias.calc_aggregate(
            ["ARaB@2"], pd.DataFrame({"qid": ["1", "1"], "docno": ["a", "a"], "score": [1, 2]}), TEXTS
        )
    with pytest.raises(ValueError, match="the texts frame has no column text"):
        genderbias.calc_aggregate(["ARaB@2"], RUN, pd.DataFrame({"docno": ["a"], "body": ["he"]}))
    with pytest.raises(ValueError, match="counterfactual collection"):
        genderbias.calc_aggregate(["CRBO@10"], RUN, TEXTS)


def test_crbo_reads_the_counterfactual_run():
    # the counterfactual run swaps the top two of q1 and keeps q2: RBO_ext by Webber et al.'s Eq. 30 here
    swapped = {"q1": {"b": 3.0, "a": 2.0, "c": 1.0}, "q2": {"c": 5.0, "a": 4.0}}
    p = 0.9
    q1 = (1 - p) / p * (0 / 1 * p + 2 / 2 * p**2 + 3 / 3 * p**3) + 1.0 * p**3
    figure = genderbias.calc_aggregate(["CRBO(p=0.9)@3"], RUN, counterfactual=swapped)[genderbias.CRBO @ 3]
    assert figure == pytest.approx((q1 + 1.0) / 2)


def test_ir_measures_computes_a_bound_measure_beside_its_own():
    import ir_measures
    from ir_measures import P

    qrels = [ir_measures.Qrel("q1", "a", 1), ir_measures.Qrel("q2", "a", 1)]
    (arab,) = genderbias.measures_for(TEXTS, measures=["ARaB@2"])
    found = ir_measures.calc_aggregate([P @ 1, arab], qrels, RUN)
    assert found[arab] == pytest.approx(expected_arab2())
    assert found[P @ 1] == pytest.approx(0.5)  # q1 ranks a first, q2 ranks c first
    with pytest.raises(ValueError, match=r"ARaB@2 reads the documents' texts: bind it first"):
        ir_measures.calc_aggregate([genderbias.ARaB @ 2], qrels, RUN)

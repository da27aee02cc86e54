"""Inputs that would give a wrong number are refused, each with the input the new user gave
(issue 83): texts as a dict keyed by int, texts that miss some ranked documents, a NaN score;
the figures are computed here by hand (ARaB's definition, tf magnitude ln(1 + count), m − f)."""

import io
import math

import pandas as pd
import pytest

import genderbias
from genderbias.api.inputs import MissingTextsError
from genderbias.ranking.defaults import TIES

# The usual reading: pd.read_csv without dtype=str makes the document ids ints.
COLLECTION = "docid,text\n1,He said it.\n2,She and she\n3,no gendered word\n"
RUN = {"q1": {"1": 3.0, "2": 2.0, "3": 1.0}}


def arab2(f_of_first, m_of_first, f_of_second, m_of_second):
    """ARaB@2 of one query: the mean over k = 1, 2 of the mean magnitude (m − f) of the top k."""
    first = math.log1p(m_of_first) - math.log1p(f_of_first)
    second = math.log1p(m_of_second) - math.log1p(f_of_second)
    return (first + (first + second) / 2) / 2


def int_keyed_texts():
    docs = pd.read_csv(io.StringIO(COLLECTION))
    texts = dict(zip(docs.docid, docs.text, strict=True))
    assert all(isinstance(key, int) for key in texts)  # the input the issue quotes
    return texts


def test_texts_keyed_by_int_are_read_by_the_runs_ids():
    figures = genderbias.calc_aggregate(["ARaB@2", "NFaiRR@2", "TExFAIR@2"], RUN, int_keyed_texts())
    # before: ARaB 0.0, NFaiRR 1.0, TExFAIR 1.0 ("perfectly fair"): no document found, all read as empty
    assert figures["ARaB@2"] == pytest.approx(arab2(0, 1, 2, 0))  # "He said it." then "She and she"
    assert figures["NFaiRR@2"] != pytest.approx(1.0)
    assert figures["TExFAIR@2"] != pytest.approx(1.0)


def test_a_run_read_with_int_ids_matches_texts_keyed_by_int():
    run = pd.read_csv(io.StringIO("qid,docno,score\n1,1,3.0\n1,2,2.0\n1,3,1.0\n"))
    figure = genderbias.calc_aggregate(["ARaB@2"], run, int_keyed_texts())["ARaB@2"]
    assert figure == pytest.approx(arab2(0, 1, 2, 0))


def test_texts_that_miss_ranked_documents_are_refused_with_the_count_and_the_first_ids():
    texts = {"1": "He said it."}  # a partial mismatch: documents 2 and 3 have no text
    with pytest.raises(MissingTextsError, match=r"lack 1 of the 2 ranked documents .*first: '2'") as refused:
        genderbias.calc_aggregate(["ARaB@2"], RUN, texts)
    assert (refused.value.count, refused.value.first) == (1, ["2"])
    with pytest.raises(MissingTextsError, match=r"lack 3 of the 3 .*first: 'd1', 'd2', 'd3'"):
        genderbias.calc_aggregate(["ARaB@3"], {"q": {"d1": 3.0, "d2": 2.0, "d3": 1.0}}, int_keyed_texts())


def test_missing_empty_reads_a_missing_document_as_one_without_a_gendered_word():
    figure = genderbias.calc_aggregate(["ARaB@2"], RUN, {"1": "He said it."}, missing="empty")["ARaB@2"]
    assert figure == pytest.approx(arab2(0, 1, 0, 0))
    (arab,) = genderbias.measures_for({"1": "He said it."}, measures=["ARaB@2"], missing="empty")
    assert genderbias.calc_aggregate([arab], RUN)[arab] == pytest.approx(arab2(0, 1, 0, 0))
    with pytest.raises(ValueError, match="missing must be one of 'error', 'empty', got 'skip'"):
        genderbias.calc_aggregate(["ARaB@2"], RUN, {"1": "he"}, missing="skip")


def test_texts_that_read_as_one_id_twice_or_lack_a_text_are_refused():
    with pytest.raises(ValueError, match=r"the texts' keys 1 and '1' are one document id"):
        genderbias.calc_aggregate(["ARaB@2"], RUN, {1: "he", "1": "she", "2": "", "3": ""} | {"x": ""})
    frame = pd.DataFrame({"docno": ["1", "1", "2", "3"], "text": ["he", "she", "", ""]})
    with pytest.raises(ValueError, match=r"the texts give document '1' twice, with two texts"):
        genderbias.calc_aggregate(["ARaB@2"], RUN, frame)
    with pytest.raises(ValueError, match=r"the text of document '2' is missing or not a string"):
        genderbias.calc_aggregate(["ARaB@2"], RUN, {"1": "he", "2": float("nan"), "3": ""})


@pytest.mark.parametrize("ties", TIES)
@pytest.mark.parametrize("score", [float("nan"), float("inf")])
def test_a_score_that_is_not_finite_is_refused_with_the_first_query_and_document(ties, score):
    run = {"q1": {"a": 3.0, "b": score, "c": 1.0}}  # before: NaN ranked somewhere, the tie range collapsed
    texts = {"a": "he", "b": "she", "c": "it"}
    with pytest.raises(ValueError, match=rf"document 'b' of query 'q1' score {score!r}: a score must be a finite"):
        genderbias.calc_aggregate([f"ARaB(ties={ties})@2"], run, texts)
    frame = pd.DataFrame({"qid": ["q1", "q1"], "docno": ["a", "b"], "score": [1.0, None]})
    with pytest.raises(ValueError, match=r"document 'b' of query 'q1' no score"):
        genderbias.calc_aggregate(["ARaB@2"], frame, texts)


def test_a_run_file_with_a_nan_score_is_refused_at_its_line(tmp_path):
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 a 1 3.0 x\nq1 Q0 b 2 nan x\n")
    with pytest.raises(ValueError, match=r"run.trec:2: score 'nan' is not a number"):
        genderbias.calc_aggregate(["ARaB@2"], path, {"a": "he", "b": "she"})


def test_a_run_without_an_id_is_refused():
    frame = pd.DataFrame({"qid": ["q1", None], "docno": ["a", "b"], "score": [2.0, 1.0]})
    with pytest.raises(ValueError, match=r"the run's row 2 has no query id"):
        genderbias.calc_aggregate(["ARaB@2"], frame, {"a": "he", "b": "she"})

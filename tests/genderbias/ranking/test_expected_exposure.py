"""EE@k (Expected Exposure, Diaz et al., CIKM 2020) of the gender groups, against the paper's definition
computed here document by document: exposure γ^(rank−1) with γ = 0.5, each of the top k documents owed
the same exposure (one relevance grade: no qrels), EE-L = Σ_G (ε_G − ε*_G)² with soft membership."""

import math

import ir_measures
import pytest

import genderbias
from genderbias.text.wordlists import GenderWords

WORDS = GenderWords(frozenset({"she", "her", "woman"}), frozenset({"he", "his", "man"}))
TEXTS = {
    "d1": "she her woman said",  # f 3, m 0
    "d2": "he his man and his",  # f 0, m 4
    "d3": "the cat sat",  # neutral
    "d4": "she and he and his",  # f 1, m 2
    "d5": "her woman man",  # f 2, m 1
    "d6": "he",  # f 0, m 1: at most τ = 1 gendered word, neutral
}
RUN = {"q1": {"d1": 6.0, "d2": 5.0, "d3": 4.0, "d4": 3.0, "d5": 2.0}, "q2": {"d2": 9.0, "d4": 8.0, "d6": 7.0}}


def membership(text: str) -> tuple[float, float]:
    words = text.lower().split()
    f = sum(w in WORDS.female for w in words)
    m = sum(w in WORDS.male for w in words)
    return (f / (f + m), m / (f + m)) if f + m > 1 else (0.0, 0.0)


def expected_exposure_loss(ranked: list[str], k: int, patience: float = 0.5) -> float:
    top = ranked[:k]
    exposure = [patience**i for i in range(len(top))]
    owed = sum(exposure) / len(top)
    loss = 0.0
    for group in (0, 1):
        achieved = sum(e * membership(TEXTS[d])[group] for e, d in zip(exposure, top, strict=True))
        target = sum(owed * membership(TEXTS[d])[group] for d in top)
        loss += (achieved - target) ** 2
    return loss


@pytest.mark.parametrize("k", [2, 3, 5])
def test_ee_is_the_papers_expected_exposure_loss_of_the_groups(k):
    figures = genderbias.per_query([f"EE@{k}"], RUN, TEXTS, representative=WORDS)
    got = dict(zip(figures["qid"], figures["value"], strict=True))
    for qid, scores in RUN.items():
        ranked = sorted(scores, key=scores.get, reverse=True)
        assert got[qid] == pytest.approx(expected_exposure_loss(ranked, k), abs=1e-12)
    mean = genderbias.calc_aggregate([f"EE@{k}"], RUN, TEXTS, representative=WORDS)[f"EE@{k}"]
    assert mean == pytest.approx(
        sum(expected_exposure_loss(sorted(s, key=s.get, reverse=True), k) for s in RUN.values()) / 2
    )


def test_a_list_giving_each_group_its_share_of_attention_scores_zero():
    # one female and one male document, equally owed; alternating f, m, f, m is not 0 (rank 1 sees more)
    texts = {"a": "she her", "b": "he his"}
    assert genderbias.calc_aggregate(["EE@2"], {"q": {"a": 2.0, "b": 1.0}}, texts, representative=WORDS)["EE@2"] > 0
    assert genderbias.calc_aggregate(["EE@1"], {"q": {"a": 2.0, "b": 1.0}}, texts, representative=WORDS)["EE@1"] == 0
    assert math.isclose(
        genderbias.calc_aggregate(["EE@2"], {"q": {"a": 2.0, "b": 1.0}}, texts, representative=WORDS)["EE@2"],
        2 * (1.0 - 0.75) ** 2,  # each owed 0.75 of 1 + 0.5; female got 1, male 0.5
    )


def test_ir_measures_knows_ee_by_name():
    measure = ir_measures.parse_measure("EE@10")
    assert str(measure) == "EE@10" and measure == genderbias.EE @ 10

"""GFR@k (Sakai, Kim & Kang 2022; NTCIR FairWeb's group-fairness measure) of the gender groups, against
the paper's definition computed here rank by rank: at each rank r ≤ k the achieved distribution over
{female, male} of the top r (soft membership, neutral documents in neither group) against the target
(t, 1 − t), GF@r = 1 − JSD in bits; no relevance term, a uniform stopping distribution over the k ranks."""

import math

import ir_measures
import pytest

import genderbias
from genderbias.text.wordlists import GenderWords

WORDS = GenderWords(frozenset({"she", "her", "woman"}), frozenset({"he", "his", "man"}))
TEXTS = {
    "d1": "she her woman said",
    "d2": "he his man and his",
    "d3": "the cat sat",
    "d4": "she and he and his",
    "d5": "her woman man",
    "d6": "he",
}
RUN = {"q1": {"d1": 6.0, "d2": 5.0, "d3": 4.0, "d4": 3.0, "d5": 2.0}, "q2": {"d3": 9.0, "d2": 8.0, "d6": 7.0}}


def membership(text: str) -> tuple[float, float]:
    words = text.lower().split()
    f = sum(w in WORDS.female for w in words)
    m = sum(w in WORDS.male for w in words)
    return (f / (f + m), m / (f + m)) if f + m > 1 else (0.0, 0.0)


def jsd_bits(p: list[float], q: list[float]) -> float:
    middle = [(a + b) / 2 for a, b in zip(p, q, strict=True)]

    def kl(x, y):
        return sum(a * math.log2(a / b) for a, b in zip(x, y, strict=True) if a > 0)

    return kl(p, middle) / 2 + kl(q, middle) / 2


def gfr(ranked: list[str], k: int, target: float = 0.5) -> float:
    top = ranked[:k]
    gold = [target, 1 - target]
    terms = []
    for r in range(1, len(top) + 1):
        f = sum(membership(TEXTS[d])[0] for d in top[:r])
        m = sum(membership(TEXTS[d])[1] for d in top[:r])
        achieved = [f / (f + m), m / (f + m)] if f + m > 0 else gold
        terms.append(1 - jsd_bits(achieved, gold))
    return sum(terms) / len(terms)


@pytest.mark.parametrize(("k", "target"), [(1, 0.5), (3, 0.5), (5, 0.5), (5, 0.3)])
def test_gfr_is_the_papers_group_fairness_of_the_top_k(k, target):
    measure = f"GFR@{k}" if target == 0.5 else f"GFR(target={target})@{k}"
    figures = genderbias.per_query([measure], RUN, TEXTS, representative=WORDS)
    got = dict(zip(figures["qid"], figures["value"], strict=True))
    for qid, scores in RUN.items():
        ranked = sorted(scores, key=scores.get, reverse=True)
        assert got[qid] == pytest.approx(gfr(ranked, k, target), abs=1e-12)


def test_a_list_of_one_gender_is_held_to_the_target():
    texts = {"a": "she her", "b": "woman she"}
    value = genderbias.calc_aggregate(["GFR@2"], {"q": {"a": 2.0, "b": 1.0}}, texts, representative=WORDS)["GFR@2"]
    # (1, 0) against (½, ½) at both ranks: the mixture is (¾, ¼), JSD = ½·log2(4/3) + ½·(½·log2(2/3) + ½·log2 2)
    jsd = 0.5 * math.log2(4 / 3) + 0.5 * (0.5 * math.log2(2 / 3) + 0.5)
    assert value == pytest.approx(1 - jsd) and value == pytest.approx(0.688722, abs=1e-6)


def test_ir_measures_knows_gfr_by_name():
    assert str(ir_measures.parse_measure("GFR(target=0.4)@10")) == "GFR(target=0.4)@10"

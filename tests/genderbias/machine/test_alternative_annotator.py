"""The alt-test (genderbias.machine.alternative_annotator) against hand arithmetic and synthetic crowds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from genderbias.labels import LABELS
from genderbias.machine.alternative_annotator import MIN_ANNOTATORS, MIN_ITEMS, NOT_INFORMATIVE, alt_test, needed_sample

# Four annotators label six items; every item has three *other* labels when one is left out.
#   item:      0  1  2  3  4  5
HAND = {
    "A": "nfmnfn",
    "B": "nfnffm",
    "C": "nmmnnn",
    "D": "ffmnmn",
}
HAND_MACHINE = "nfmfnn"

# Worked by hand (S = share of the 3 other annotators matching; W_f = 1[S_f >= S_h],
# W_h = 1[S_h >= S_f], d = W_h - W_f):
#   A: item 3 others (f,n,n): S_h(n)=2/3 > S_f(f)=1/3 -> d=1; items 0,1,2,4,5 tie -> d=0
#   B: item 2 others (m,m,m): S_h(n)=0 < S_f(m)=1 -> d=-1; item 5 others (n,n,n): S_h(m)=0 < S_f(n)=1 -> d=-1
#   C: item 1 others (f,f,f): S_h(m)=0 < S_f(f)=1 -> d=-1; item 3 others (n,f,n): 2/3 > 1/3 -> d=1
#   D: item 0 others (n,n,n): S_h(f)=0 < 1 -> d=-1; item 3: d=1; item 4 others (f,f,n): S_h(m)=0 < S_f(n)=1/3 -> d=-1
HAND_D = {
    "A": [0, 0, 0, 1, 0, 0],
    "B": [0, 0, -1, 0, 0, -1],
    "C": [0, -1, 0, 1, 0, 0],
    "D": [-1, 0, 0, 1, -1, 0],
}
#   rho_machine = share of W_f = 1: A 5/6, B 6/6, C 5/6, D 5/6   -> rho = (5/6 * 3 + 1) / 4 = 0.875
#   rho_human   = share of W_h = 1: A 6/6, B 4/6, C 5/6, D 4/6
HAND_RHO = {"A": (5 / 6, 1.0), "B": (1.0, 4 / 6), "C": (5 / 6, 5 / 6), "D": (5 / 6, 4 / 6)}


def _by_items(labels: str) -> dict[str, str]:
    return {f"q{i}": label for i, label in enumerate(labels)}


def _hand_p(d: list[int], epsilon: float) -> float:
    """t = (mean(d) - eps) / (sd(d, ddof=1) / sqrt(n)); p = P(T_{n-1} <= t)."""
    n = len(d)
    mean = sum(d) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1))
    return float(stats.t.cdf((mean - epsilon) / (sd / math.sqrt(n)), df=n - 1))


def _explicit_by(p_values: list[float], alpha: float) -> list[bool]:
    """Benjamini–Yekutieli step-up: reject the k smallest, k = max{k : p_(k) <= k/m * alpha / H_m}."""
    m = len(p_values)
    harmonic = sum(1 / i for i in range(1, m + 1))
    order = sorted(range(m), key=lambda i: p_values[i])
    k = max((rank for rank in range(1, m + 1) if p_values[order[rank - 1]] <= rank / m * alpha / harmonic), default=0)
    rejected = [False] * m
    for i in order[:k]:
        rejected[i] = True
    return rejected


def test_hand_computed_example():
    humans = {a: _by_items(labels) for a, labels in HAND.items()}
    result = alt_test(humans, _by_items(HAND_MACHINE), epsilon=0.1, alpha=0.05, min_items=6)

    rows = {row["annotator"]: row for row in result.annotators}
    assert set(rows) == set(HAND)
    for annotator, d in HAND_D.items():
        assert rows[annotator]["items"] == 6
        assert rows[annotator]["rho_machine"] == pytest.approx(HAND_RHO[annotator][0])
        assert rows[annotator]["rho_human"] == pytest.approx(HAND_RHO[annotator][1])
        assert rows[annotator]["p_value"] == pytest.approx(_hand_p(d, 0.1))
    # B: mean(d) = -1/3, sd = sqrt(4/15), t = (-1/3 - 0.1) / (sqrt(4/15) / sqrt(6)) = -2.0555, p = 0.0475
    assert rows["B"]["p_value"] == pytest.approx(0.0475, abs=1e-3)
    # ... below 0.05, but BY over 4 tests asks p_(1) <= 1/4 * 0.05 / (1 + 1/2 + 1/3 + 1/4) = 0.006
    assert not any(row["rejected"] for row in result.annotators)
    assert result.winning_rate == 0.0
    assert result.passed is False
    assert result.advantage_probability == pytest.approx(0.875)
    assert result.excluded == []


def test_hand_example_at_a_looser_level_rejects_only_the_smallest():
    # BY at alpha=0.5, m=4: thresholds k * 0.5 / (4 * 25/12) = 0.06 k; sorted p: B 0.047 <= 0.06, D 0.213 > 0.12,
    # C 0.357 > 0.18, A 0.647 > 0.24 -> only B is rejected, winning rate 1/4.
    humans = {a: _by_items(labels) for a, labels in HAND.items()}
    result = alt_test(humans, _by_items(HAND_MACHINE), epsilon=0.1, alpha=0.5, min_items=6)
    assert {row["annotator"]: row["rejected"] for row in result.annotators} == {
        "A": False,
        "B": True,
        "C": False,
        "D": False,
    }
    assert result.winning_rate == 0.25
    assert result.passed is False


def _crowd(seed: int, *, n_items: int = 150, n_annotators: int = 6, noise: float = 0.3):
    """Items with a true label; each item labelled by 3 of the annotators; each vote is wrong with prob. noise."""
    rng = np.random.default_rng(seed)
    labels = np.array(LABELS)
    truth = rng.choice(labels, size=n_items, p=[0.47, 0.20, 0.32, 0.01])
    humans: dict[str, dict[str, str]] = {f"w{a}": {} for a in range(n_annotators)}
    for i in range(n_items):
        for a in rng.choice(n_annotators, size=3, replace=False):
            wrong = rng.random() < noise
            vote = rng.choice(labels[labels != truth[i]]) if wrong else truth[i]
            humans[f"w{a}"][f"q{i}"] = str(vote)
    return truth, humans


def _majority(humans: dict[str, dict[str, str]]) -> dict[str, str]:
    votes: dict[str, list[str]] = {}
    for labels in humans.values():
        for item, label in labels.items():
            votes.setdefault(item, []).append(label)
    return {item: max(sorted(set(v)), key=v.count) for item, v in votes.items()}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_machine_copying_the_majority_passes(seed):
    _, humans = _crowd(seed)
    result = alt_test(humans, _majority(humans))
    assert result.passed is True
    assert result.winning_rate >= 0.5
    assert result.advantage_probability > 0.8
    assert all(row["items"] >= MIN_ITEMS for row in result.annotators)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_random_machine_fails(seed):
    _, humans = _crowd(seed)
    rng = np.random.default_rng(100 + seed)
    machine = {item: str(rng.choice(LABELS)) for item in _majority(humans)}
    result = alt_test(humans, machine)
    assert result.passed is False
    assert result.winning_rate == 0.0
    assert all(row["rho_machine"] < row["rho_human"] for row in result.annotators)


def test_by_correction_matches_an_explicit_step_up():
    # A mediocre machine (the truth with 30% noise) against many annotators gives a spread of p-values.
    truth, humans = _crowd(7, n_items=400, n_annotators=12)
    rng = np.random.default_rng(8)
    flip = rng.random(len(truth)) < 0.3
    machine = {f"q{i}": str(rng.choice(LABELS)) if flip[i] else str(t) for i, t in enumerate(truth)}
    result = alt_test(humans, machine, epsilon=0.1, alpha=0.05)
    p_values = [row["p_value"] for row in result.annotators]
    assert len(p_values) == 12
    assert [row["rejected"] for row in result.annotators] == _explicit_by(p_values, 0.05)
    assert result.winning_rate == pytest.approx(sum(_explicit_by(p_values, 0.05)) / 12)
    # ... and it is BY, not Benjamini–Hochberg: BH (no 1/H_m factor) rejects more here.
    harmonic = sum(1 / i for i in range(1, 13))
    assert sum(_explicit_by(p_values, 0.05 * harmonic)) > sum(_explicit_by(p_values, 0.05))
    assert result.passed is (result.winning_rate >= 0.5)


def test_annotators_with_too_few_items_are_excluded_and_reported():
    _, humans = _crowd(4)
    items = list(_majority(humans))
    # 'late' labels 10 items, all also labelled by others: below the minimum of 30.
    humans["late"] = {item: humans["w0"].get(item) or humans["w1"].get(item) or "n" for item in items[:10]}
    # 'lonely' labels 40 items nobody else labelled: items with one human are dropped, so 0 items remain.
    humans["lonely"] = {f"solo{i}": "n" for i in range(40)}
    machine = _majority(humans)
    result = alt_test(humans, machine)
    assert result.excluded == ["late", "lonely"]
    assert {row["annotator"] for row in result.annotators} == {f"w{a}" for a in range(6)}
    # With a lower minimum 'late' is tested; 'lonely' still has no item shared with anyone.
    result = alt_test(humans, machine, min_items=10)
    assert result.excluded == ["lonely"]
    assert {row["annotator"]: row["items"] for row in result.annotators}["late"] == 10


def test_items_without_a_machine_label_do_not_count():
    _, humans = _crowd(5)
    machine = _majority(humans)
    kept = dict(list(machine.items())[:20])
    result = alt_test(humans, kept)
    assert result.winning_rate is None
    assert len(result.excluded) == 6


def test_nobody_qualifies_gives_none():
    humans = {"a": {"q1": "n", "q2": "f"}, "b": {"q1": "n", "q3": "m"}}
    result = alt_test(humans, {"q1": "n", "q2": "f", "q3": "m"})
    assert result.winning_rate is None
    assert result.passed is None
    assert result.advantage_probability is None
    assert result.annotators == []
    assert result.excluded == ["a", "b"]
    assert result.as_dict()["winning_rate"] is None


def test_one_vote_per_item_gives_none():
    humans = {"a": {f"q{i}": "n" for i in range(50)}, "b": {f"r{i}": "n" for i in range(50)}}
    machine = {**{f"q{i}": "n" for i in range(50)}, **{f"r{i}": "n" for i in range(50)}}
    assert alt_test(humans, machine).winning_rate is None


def test_epsilon_is_a_penalty_on_the_humans():
    # The same data with a larger epsilon can only lower p-values (H0: mean(d) >= epsilon).
    humans = {a: _by_items(labels) for a, labels in HAND.items()}
    low = alt_test(humans, _by_items(HAND_MACHINE), epsilon=0.0, min_items=6)
    high = alt_test(humans, _by_items(HAND_MACHINE), epsilon=0.3, min_items=6)
    for a, b in zip(low.annotators, high.annotators, strict=True):
        assert b["p_value"] < a["p_value"]
    assert low.epsilon == 0.0 and high.epsilon == 0.3


def test_constant_differences_give_the_limit_p_value():
    # Every item a tie (d = 0 < epsilon): t = -inf, p = 0; scipy would warn, so the limit is used.
    labels = "nf" * 20
    humans = {a: _by_items(labels) for a in "abc"}
    result = alt_test(humans, _by_items(labels))
    assert [row["p_value"] for row in result.annotators] == [0.0, 0.0, 0.0]
    assert result.passed is True
    # d = 0 and epsilon = 0: H0 mean(d) >= 0 holds exactly; no evidence against it.
    result = alt_test(humans, _by_items(labels), epsilon=0.0)
    assert [row["p_value"] for row in result.annotators] == [1.0, 1.0, 1.0]
    assert result.passed is False


@pytest.mark.parametrize("kwargs", [{"alpha": 0.0}, {"alpha": 1.0}, {"min_items": 1}])
def test_invalid_arguments(kwargs):
    with pytest.raises(ValueError):
        alt_test({}, {}, **kwargs)


def test_an_item_the_humans_split_on_is_used():
    # Three humans label q0 n, f, m (no majority) and agree on q1 (n, n, n); the machine says n on both.
    # Leaving A out of q0: others (f, m); S_h(n) = 0 = S_f(n): a tie, d = 0. Leaving B out: others (n, m);
    # S_h(f) = 0 < S_f(n) = 1/2: the machine wins, d = -1. Leaving C out: others (n, f): S_h(m) = 0 < 1/2, d = -1.
    # q1: every leave-one-out ties (d = 0). So with min_items=2 the split item is in every annotator's test.
    humans = {"A": {"q0": "n", "q1": "n"}, "B": {"q0": "f", "q1": "n"}, "C": {"q0": "m", "q1": "n"}}
    result = alt_test(humans, {"q0": "n", "q1": "n"}, min_items=2)
    rows = {row["annotator"]: row for row in result.annotators}
    assert result.items == 2 and {a: r["items"] for a, r in rows.items()} == {"A": 2, "B": 2, "C": 2}
    assert rows["A"]["rho_human"] == 1.0 and rows["B"]["rho_human"] == 0.5 and rows["C"]["rho_human"] == 0.5
    assert all(r["rho_machine"] == 1.0 for r in rows.values())


def _split_crowd(per_annotator: dict[str, int], n_items: int) -> dict[str, dict[str, str]]:
    """'base' labels every item (so each item has two labels); annotator a labels the first n of them."""
    humans = {"base": {f"q{i}": "n" for i in range(n_items)}}
    for annotator, n in per_annotator.items():
        humans[annotator] = {f"q{i}": "n" if i % 4 else "f" for i in range(n)}
    return humans


def test_too_few_qualified_annotators_is_not_informative_and_names_the_sample_needed():
    # base labels 50 items, A the first 40, B 20 and C 10: items 40-49 have one label, so 40 are in the
    # test. Qualified (>= 30 items): base and A, two < 3.
    humans = _split_crowd({"A": 40, "B": 20, "C": 10}, 50)
    machine = {f"q{i}": "n" for i in range(50)}
    result = alt_test(humans, machine)
    assert [row["annotator"] for row in result.annotators] == ["base", "A"]
    assert result.informative is False and result.passed is None and result.verdict == NOT_INFORMATIVE
    assert result.winning_rate is not None  # shown, but no verdict is drawn from two annotators
    # Rates over the test's 40 items (the default sample): base 1.0, A 1.0, B 0.5, C 0.25; the third
    # largest is 0.5, so 30 / 0.5 = 60 items would give three annotators 30 items each.
    assert result.items == 40 and result.sample_size == 40 and result.needed_sample == 60
    # Over a sample of 200 queries (the other 150 had fewer than two labels): B's rate is 20/200, 30 / 0.1 = 300.
    assert alt_test(humans, machine, sample_size=200).needed_sample == 300
    assert result.as_dict()["verdict"] == "not informative"


def test_three_qualified_annotators_give_a_verdict():
    humans = _split_crowd({"A": 40, "B": 30}, 50)
    result = alt_test(humans, {f"q{i}": "n" for i in range(50)})
    assert MIN_ANNOTATORS == 3 and len(result.annotators) == 3
    assert result.informative is True and result.passed is not None and result.needed_sample is None
    assert result.verdict == ("passed" if result.passed else "not passed")


def test_needed_sample_rule():
    assert needed_sample([30, 15, 10], 100, 30, 3) == 300  # third rate 0.10: 30 / 0.1
    assert needed_sample([30, 15, 7], 100, 30, 3) == 429  # ceil(30 / 0.07) = ceil(428.57)
    assert needed_sample([30, 15, 0, 0], 100, 30, 3) is None  # only two annotators labelled anything
    assert needed_sample([40, 35, 30], 50, 30, 3) == 50  # already enough: the sample as it is
    # The docs' example: of a 200-query sample the busiest annotators took 45, 24, 15 and 9 queries;
    # the third rate is 15 / 200 = 0.075, and 30 / 0.075 = 400 queries.
    assert needed_sample([45, 24, 15, 9], 200, 30, 3) == 400


def test_min_annotators_may_be_lowered():
    humans = _split_crowd({"A": 40}, 50)
    result = alt_test(humans, {f"q{i}": "n" for i in range(50)}, min_annotators=2)
    assert result.informative is True and result.passed is not None

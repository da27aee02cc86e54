"""genderbias.machine.routing_statistics: threshold choice on the calibration sample, and the split of a batch.

Intervals are checked against statsmodels; the rest is worked out by hand in comments.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from genderbias.machine.routing_statistics import (
    RoutingSplit,
    accuracy_at,
    choose_threshold,
    kish_effective_n,
    split_by_threshold,
)
from genderbias.stats.intervals import wilson_interval

# --- accuracy_at, Wilson, Kish ----------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.01])
def test_equal_weights_give_statsmodels_wilson(seed, alpha):
    rng = np.random.default_rng(seed)
    confidence = rng.random(80)
    correct = rng.random(80) < 0.8
    for threshold in (0.0, 0.3, 0.75, 0.95):
        above = confidence >= threshold
        count, nobs = int(correct[above].sum()), int(above.sum())
        low, high = proportion_confint(count, nobs, alpha=alpha, method="wilson")
        for weights in (None, [2.5] * 80):  # a constant weight changes nothing
            estimate, ci, accepted = accuracy_at(confidence, correct, weights, threshold, alpha=alpha)
            assert accepted == nobs
            assert estimate == pytest.approx(count / nobs, abs=1e-12)
            assert ci == pytest.approx((low, high), abs=1e-12)


def test_kish_effective_n_by_hand():
    # (1 + 1 + 2 + 2)² / (1 + 1 + 4 + 4) = 36 / 10
    assert kish_effective_n([1, 1, 2, 2]) == pytest.approx(3.6)
    assert kish_effective_n([3, 3, 3]) == pytest.approx(3.0)


def test_weighted_accuracy_uses_the_kish_n():
    # Weights 1, 1, 2, 2, correct 1, 0, 1, 1: p̂ = (1 + 2 + 2) / 6 = 5/6, n_eff = 3.6, so the
    # interval is Wilson's for 3 "successes" out of 3.6 (5/6 · 3.6 = 3), not for 3 of 4.
    estimate, ci, accepted = accuracy_at([0.9, 0.8, 0.7, 0.6], [1, 0, 1, 1], [1, 1, 2, 2], 0.5)
    assert estimate == pytest.approx(5 / 6)
    assert accepted == 4
    assert ci == pytest.approx(proportion_confint(3.0, 3.6, alpha=0.05, method="wilson"), abs=1e-12)
    assert ci != pytest.approx(proportion_confint(3, 4, alpha=0.05, method="wilson"), abs=1e-6)


def test_accuracy_at_counts_ties_and_returns_none_above_everything():
    # Threshold 0.8 takes 0.8 itself: items 0.9 (right) and 0.8 (wrong) → 1/2.
    assert accuracy_at([0.9, 0.8, 0.7], [True, False, True], None, 0.8)[::2] == (0.5, 2)
    assert accuracy_at([0.9, 0.8, 0.7], [True, False, True], None, 0.95) == (None, None, 0)


def test_wilson_interval_at_the_edges():
    # p = 1: the upper bound is exactly 1 after clipping; the lower bound n / (n + z²).
    low, high = wilson_interval(1.0, 10)
    z = 1.959963984540054
    assert float(high) == 1.0
    assert float(low) == pytest.approx(10 / (10 + z**2), abs=1e-12)


# --- choose_threshold -------------------------------------------------------------------

#: 20 sample items, confidences 1.00, 0.95, …, 0.05 (descending) and whether the machine was right.
CONFIDENCE = np.arange(20, 0, -1) / 20
CORRECT = [1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 0, 1, 0, 0, 1, 0]
# Accepting the top k: right 1..6 → 1.0; k = 7: 6/7 = .857; 8: 7/8 = .875; 9: 8/9 = .889;
# 10: 9/10 = .9; 11: 10/11 = .909; 12: 11/12 = .917; 13: 11/13 = .846; … 20: 14/20 = .7.


def test_choose_threshold_picks_the_lowest_that_meets():
    # target .9 and ≥ 10 accepted: k = 10, 11, 12 meet; the lowest threshold is the 12th, 0.45.
    choice = choose_threshold(CONFIDENCE, CORRECT, target=0.9, min_accepted=10)
    assert choice.threshold == pytest.approx(0.45)
    assert choice.estimated_accuracy == pytest.approx(11 / 12)
    assert choice.sample_accepted == 12
    assert choice.ci == pytest.approx(proportion_confint(11, 12, alpha=0.05, method="wilson"), abs=1e-12)
    assert (choice.target, choice.conservative) == (0.9, False)
    assert [c["sample_accepted"] for c in choice.candidates if c["meets"]] == [10, 11, 12]


def test_a_miss_above_does_not_stop_a_lower_threshold():
    # min_accepted 1: k = 1..6 meet, 7..9 miss (.857, .875, .889), 10..12 meet again: still 0.45.
    choice = choose_threshold(CONFIDENCE, CORRECT, target=0.9, min_accepted=1)
    assert [c["meets"] for c in choice.candidates[:13]] == [True] * 6 + [False] * 3 + [True] * 3 + [False]
    assert choice.threshold == pytest.approx(0.45)


def test_min_accepted_is_respected_and_none_when_nothing_meets():
    # target .95: only k ≤ 6 (all right) meet on the estimate.
    assert choose_threshold(CONFIDENCE, CORRECT, target=0.95, min_accepted=6).threshold == pytest.approx(0.75)
    choice = choose_threshold(CONFIDENCE, CORRECT, target=0.95, min_accepted=7)
    assert choice == choose_threshold(CONFIDENCE, CORRECT, target=0.95, min_accepted=7)
    assert (choice.threshold, choice.estimated_accuracy, choice.ci, choice.sample_accepted) == (None, None, None, 0)
    assert len(choice.candidates) == 20
    assert not any(c["meets"] for c in choice.candidates)


def test_conservative_is_stricter():
    # target .6: every estimate is ≥ .7, so plainly the lowest confidence, 0.05, is chosen.
    plain = choose_threshold(CONFIDENCE, CORRECT, target=0.6, min_accepted=1)
    assert plain.threshold == pytest.approx(0.05)
    # Conservative: Wilson lower bounds ≥ .6 only at k = 6 (.610), 11 (.623), 12 (.646), 14 (.601),
    # so the 14th confidence, 0.35.
    careful = choose_threshold(CONFIDENCE, CORRECT, target=0.6, min_accepted=1, conservative=True)
    assert careful.threshold == pytest.approx(0.35)
    assert careful.conservative is True
    expected = [
        k for k in range(1, 21) if proportion_confint(sum(CORRECT[:k]), k, alpha=0.05, method="wilson")[0] >= 0.6
    ]
    assert [c["sample_accepted"] for c in careful.candidates if c["meets"]] == expected == [6, 11, 12, 14]


def test_candidates_are_distinct_thresholds_descending_with_ties_accepted_together():
    # 0.8 twice: one candidate, accepting both items (and 0.9): 2 right of 3.
    choice = choose_threshold([0.9, 0.8, 0.8, 0.5], [1, 1, 0, 1], target=0.5, min_accepted=1)
    assert [c["threshold"] for c in choice.candidates] == [0.9, 0.8, 0.5]
    assert [c["sample_accepted"] for c in choice.candidates] == [1, 3, 4]
    assert choice.candidates[1]["estimated_accuracy"] == pytest.approx(2 / 3)
    assert set(choice.candidates[0]) == {"threshold", "estimated_accuracy", "ci", "sample_accepted", "meets"}


def test_weights_change_the_estimate():
    # Unweighted, top 3 of 4 are right: 3/4 ≥ .7 at 0.6. Weighted (the wrong item stands for 5 queries):
    # at 0.6: (1 + 1 + 1) / (1 + 1 + 1 + 5) = 3/8 < .7; at 0.7: 1 + 1 + 1 of 3 → meets.
    confidence, correct, weights = [0.9, 0.8, 0.7, 0.6], [1, 1, 1, 0], [1, 1, 1, 5]
    assert choose_threshold(confidence, correct, target=0.7, min_accepted=1).threshold == 0.6
    weighted = choose_threshold(confidence, correct, weights, target=0.7, min_accepted=1)
    assert weighted.threshold == 0.7
    assert weighted.candidates[-1]["estimated_accuracy"] == pytest.approx(3 / 8)


def test_a_target_reached_exactly_meets_despite_float_weights():
    # 9 right, 1 wrong, all weighted 1.3: Σw·c / Σw = 11.7 / 13 comes out as 0.8999999999999999 in floats.
    weights = [1.3] * 10
    assert np.cumsum(weights[:9])[-1] / np.cumsum(weights)[-1] < 0.9
    choice = choose_threshold([0.5] * 10, [1] * 9 + [0], weights, target=0.9, min_accepted=1)
    assert choice.threshold == 0.5


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"target": 0.0}, r"target must be in \(0, 1\]"),
        ({"target": 1.1}, r"target must be in \(0, 1\]"),
        ({"target": 0.9, "alpha": 0.0}, "alpha must be between 0 and 1"),
        ({"target": 0.9, "weights": [1.0]}, "lengths differ"),
        ({"target": 0.9, "weights": [1.0, 0.0]}, "weights must be positive"),
        ({"target": 0.9, "confidence": [0.5, 1.2]}, r"confidences must be in \[0, 1\]"),
        ({"target": 0.9, "correct": [1, 2]}, "correct must be booleans"),
        ({"target": 0.9, "confidence": [], "correct": []}, "no sample items"),
    ],
)
def test_choose_threshold_rejects_bad_input(kwargs, message):
    arguments = {"confidence": [0.5, 0.6], "correct": [True, False], **kwargs}
    with pytest.raises(ValueError, match=message):
        choose_threshold(**arguments)


# --- split_by_threshold -----------------------------------------------------------------

BATCH = {"q1": 0.95, "q2": 0.2, "q3": 0.1, "q4": 0.2, "q5": 0.5, "q6": 0.8, "q7": 0.3}


def test_split_without_budget_excludes_the_sample():
    # q5 was in the calibration sample: it goes nowhere. 0.8 itself is accepted.
    split = split_by_threshold(BATCH, 0.8, exclude={"q5"})
    assert split == RoutingSplit(accepted=["q1", "q6"], to_humans=["q3", "q2", "q4", "q7"], over_budget=[])


def test_split_with_a_budget_takes_the_lowest_confidence_first_ties_by_qid():
    # floor(0.65 / 0.30) = 2 queries: q3 (0.1), then q2 before q4 (both 0.2, by qid).
    split = split_by_threshold(BATCH, 0.8, exclude={"q5"}, cost_per_query=Decimal("0.30"), budget=Decimal("0.65"))
    assert split.to_humans == ["q3", "q2"]
    assert split.over_budget == ["q4", "q7"]
    assert split.accepted == ["q1", "q6"]


def test_split_ties_go_by_qid_whatever_the_mapping_order():
    batch = {"b": 0.2, "c": 0.2, "a": 0.2, "z": 0.1}
    assert split_by_threshold(batch, 0.5).to_humans == ["z", "a", "b", "c"]


def test_split_budget_is_exact_decimal_arithmetic():
    # 0.90 / 0.30 = 3 exactly (in floats 0.9 / 0.3 = 2.9999999999999996 would floor to 2).
    split = split_by_threshold(BATCH, 0.8, cost_per_query=Decimal("0.30"), budget=Decimal("0.90"))
    assert split.to_humans == ["q3", "q2", "q4"]
    assert split.over_budget == ["q7", "q5"]
    assert split_by_threshold(BATCH, 0.8, cost_per_query=Decimal("0.30"), budget=Decimal("0")).to_humans == []


def test_split_with_no_threshold_accepts_nothing():
    split = split_by_threshold(BATCH, None, exclude=["q1", "q6"])
    assert split.accepted == []
    assert split.to_humans == ["q3", "q2", "q4", "q7", "q5"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"budget": Decimal("1")}, "a budget needs cost_per_query"),
        ({"budget": Decimal("1"), "cost_per_query": Decimal("0")}, "cost_per_query must be positive"),
        ({"budget": Decimal("-1"), "cost_per_query": Decimal("0.1")}, "budget must not be negative"),
    ],
)
def test_split_rejects_bad_budgets(kwargs, message):
    with pytest.raises(ValueError, match=message):
        split_by_threshold(BATCH, 0.5, **kwargs)

"""MTurk's prices (platforms/mturk/prices.py), through the kernel's cost functions, checked
against hand-computed commissions (MTurk's pricing page: 20%, 40% from 10 assignments, at least $0.01,
Masters 5% more)."""

from __future__ import annotations

import dataclasses
from decimal import Decimal

import pytest

from annotation.crowd import costs
from annotation.crowd.costs import Cost, provider_cost

D = Decimal


def batch_cost(reward, assignments: int, hits: int) -> Cost:
    """``hits`` HITs of ``assignments`` on MTurk, without Masters."""
    return provider_cost("mturk", reward, assignments, hits)


def extra_assignments_cost(reward, extra_per_hit, assignments_per_hit: int, options=None) -> Cost:
    return costs.extra_assignments_cost("mturk", reward, extra_per_hit, assignments_per_hit, options=options)


def test_three_assignments_at_five_cents():
    # 20% of $0.05 = $0.01 per assignment; 100 HITs × 3 = 300 assignments.
    cost = batch_cost(D("0.05"), assignments=3, hits=100)
    assert cost == Cost(
        per_assignment_reward=D("0.05"),
        per_assignment_fee=D("0.01"),
        rewards=D("15.00"),
        fees=D("3.00"),
        total=D("18.00"),
        fee_rate=D("0.20"),
        assignments_total=300,
    )


def test_fee_is_at_least_one_cent():
    # 20% of $0.02 is $0.004, below the $0.01 minimum.
    cost = batch_cost(D("0.02"), assignments=3, hits=10)
    assert cost.per_assignment_fee == D("0.01")
    assert cost.fees == D("0.30")
    assert cost.total == D("0.90")


def test_ten_assignments_pay_forty_percent():
    # 40% of $0.05 = $0.02; 9 assignments is still 20%.
    ten = batch_cost(D("0.05"), assignments=10, hits=2)
    assert ten.fee_rate == D("0.40")
    assert ten.per_assignment_fee == D("0.02")
    assert ten.fees == D("0.40") and ten.rewards == D("1.00") and ten.total == D("1.40")
    nine = batch_cost(D("0.05"), assignments=9, hits=2)
    assert nine.fee_rate == D("0.20") and nine.per_assignment_fee == D("0.01")


def test_fee_is_rounded_half_up_per_assignment():
    # 20% of $0.13 = $0.026 -> $0.03 (rounding the batch total instead would give 0.026 × 1000 = $26.00).
    up = batch_cost(D("0.13"), assignments=5, hits=200)
    assert up.per_assignment_fee == D("0.03")
    assert up.fees == D("30.00")
    # 20% of $0.37 = $0.074 -> $0.07; 40% of $0.12 = $0.048 -> $0.05.
    assert batch_cost(D("0.37"), 3, 1).per_assignment_fee == D("0.07")
    assert batch_cost(D("0.12"), 12, 1).per_assignment_fee == D("0.05")


def test_amounts_are_exact_decimals_and_the_result_is_frozen():
    cost = batch_cost(D("0.07"), assignments=3, hits=3750)
    assert all(isinstance(getattr(cost, f), Decimal) for f in ("rewards", "fees", "total", "fee_rate"))
    assert cost.rewards == D("787.50")  # 0.07 × 11,250 exactly; 0.07 is not exact as a float
    assert cost.total == cost.rewards + cost.fees
    with pytest.raises(dataclasses.FrozenInstanceError):
        cost.total = D("0")  # type: ignore[misc]


def test_invalid_inputs_are_refused():
    with pytest.raises(TypeError):
        batch_cost(0.05, 3, 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        batch_cost(D("0"), 3, 1)
    with pytest.raises(ValueError):
        batch_cost(D("0.055"), 3, 1)  # not whole cents
    with pytest.raises(ValueError):
        batch_cost(D("0.05"), 0, 1)
    with pytest.raises(ValueError):
        batch_cost(D("0.05"), 3, -1)
    assert batch_cost("0.05", 3, 0).total == D("0")


def test_extra_assignments_per_hit():
    cost = extra_assignments_cost(D("0.05"), {"HIT1": 2, "HIT2": 1, "HIT3": 0}, assignments_per_hit=3)
    assert cost.assignments_total == 3
    assert cost.fee_rate == D("0.20")
    assert cost.rewards == D("0.15") and cost.fees == D("0.03") and cost.total == D("0.18")


def test_extra_assignments_as_a_total():
    cost = extra_assignments_cost(D("0.05"), 40, assignments_per_hit=5)
    assert cost.assignments_total == 40
    assert cost.total == D("2.40")


def test_extending_a_small_hit_to_ten_is_refused_like_mturk_does():
    # MTurk: HITs created with fewer than 10 assignments cannot be extended to 10 or more.
    with pytest.raises(ValueError, match="HIT2"):
        extra_assignments_cost(D("0.05"), {"HIT1": 4, "HIT2": 5}, assignments_per_hit=5)
    with pytest.raises(ValueError):
        extra_assignments_cost(D("0.05"), 1, assignments_per_hit=9)
    assert extra_assignments_cost(D("0.05"), {"HIT1": 4}, assignments_per_hit=5).fee_rate == D("0.20")


def test_extra_assignments_on_large_hits_pay_forty_percent():
    cost = extra_assignments_cost(D("0.05"), {"HIT1": 3}, assignments_per_hit=10)
    assert cost.fee_rate == D("0.40")
    assert cost.per_assignment_fee == D("0.02")
    assert cost.total == D("0.21")


def test_negative_extra_assignments_are_refused():
    with pytest.raises(ValueError, match="HIT1"):
        extra_assignments_cost(D("0.05"), {"HIT1": -1}, assignments_per_hit=3)
    with pytest.raises(ValueError):
        extra_assignments_cost(D("0.05"), -2, assignments_per_hit=3)


def test_masters_add_five_percent_of_the_reward_to_the_mturk_commission():
    # $0.50 × (20% + 5%) = $0.125 -> $0.13 per assignment (half-up); 30 assignments.
    cost = provider_cost("mturk", D("0.50"), assignments=3, hits=10, options={"masters": True})
    assert cost.per_assignment_fee == D("0.13")
    assert cost.fee_rate == D("0.25")
    assert cost.total == D("18.90")
    # With 10+ assignments: 40% + 5% of $1.00.
    assert provider_cost("mturk", D("1.00"), 10, 1, options={"masters": True}).per_assignment_fee == D("0.45")
    # Without Masters it is the plain commission.
    assert provider_cost("mturk", D("0.50"), 3, 10) == batch_cost(D("0.50"), 3, 10)


def test_extra_assignments_with_masters_pay_the_surcharge_too():
    # $0.40 × (20% + 5%) = $0.10 per extra assignment; 3 of them.
    cost = extra_assignments_cost(D("0.40"), {"HIT1": 2, "HIT2": 1}, assignments_per_hit=3, options={"masters": True})
    assert (cost.per_assignment_fee, cost.total) == (D("0.10"), D("1.50"))


def test_a_bonus_pays_twenty_percent_each_at_least_a_cent():
    # MTurk: 20% per bonus, at least $0.01: $0.04 -> $0.008 -> $0.01; $0.50 -> $0.10.
    mturk = costs.bonus_cost([D("0.04"), D("0.50")], "mturk")
    assert (mturk.fees, mturk.total) == (D("0.11"), D("0.65"))

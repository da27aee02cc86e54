"""The kernel's cost arithmetic (annotation/crowd/costs.py): the in-house price, a toy platform's
commission and share of the total computed by hand, and a platform with no prices refused."""

from __future__ import annotations

from decimal import Decimal

import pytest

from annotation.crowd.costs import bonus_cost, extra_assignments_cost, provider_cost, spent_on

D = Decimal


def test_a_local_batch_pays_rewards_only():
    cost = provider_cost("local", D("0.05"), assignments=3, hits=100)
    assert (cost.per_assignment_fee, cost.fees, cost.total) == (D("0.00"), D("0.00"), D("15.00"))


def test_unknown_provider_has_no_prices():
    with pytest.raises(ValueError, match="no prices"):
        provider_cost("crowdflower", D("0.05"), 1, 1)


# -- a platform's own prices, reached through its provider (the toy platform: tests/annotation/toy_platform.py)
def test_a_platforms_commission_is_its_own_rounded_per_assignment(toy_platform):
    # 10% of $0.15 = $0.015 -> $0.02 (half-up, and the toy's least fee); 2 HITs × 3 = 6 assignments.
    cost = provider_cost("toy", D("0.15"), 3, 2)
    assert (cost.per_assignment_fee, cost.fees, cost.total) == (D("0.02"), D("0.12"), D("1.02"))
    # 10% of $0.55 = $0.055 -> $0.06 per assignment; its ``gold`` tier doubles the rate: $0.11.
    assert provider_cost("toy", D("0.55"), 1, 1).per_assignment_fee == D("0.06")
    assert provider_cost("toy", D("0.55"), 1, 1, options={"tier": "gold"}).per_assignment_fee == D("0.11")


def test_a_platforms_bonus_fee_and_its_extension_limit_are_its_own(toy_platform):
    # Half of $0.25 + $0.50 = $0.375 -> $0.38, rounded once on the charge.
    charged = bonus_cost([D("0.25"), D("0.50")], "toy")
    assert (charged.fees, charged.total) == (D("0.38"), D("1.13"))
    # Extra assignments pay the platform's price; past its limit it refuses, naming it.
    assert extra_assignments_cost("toy", D("0.15"), {"H1": 1, "H2": 0}, 3).total == D("0.17")
    with pytest.raises(ValueError, match="past 4"):
        extra_assignments_cost("toy", D("0.15"), {"H1": 2}, 3)
    assert toy_platform.extension_refusal(3, 4) is None
    assert "at most 4" in toy_platform.extension_refusal(3, 5)


def test_what_a_batch_spent_is_its_work_and_its_bonus_charges_at_its_platforms_price(toy_platform):
    # 4 answered at $0.20 (fee $0.02 each) and two charges: $0.10 (fee $0.05), $0.30 + $0.30 (fee $0.30).
    spent = spent_on("toy", D("0.20"), 4, assignments_per_hit=2, bonus_charges=[[D("0.10")], [D("0.30"), D("0.30")]])
    assert (spent.rewards, spent.reward_fees, spent.bonuses, spent.bonus_fees) == (
        D("0.80"),
        D("0.08"),
        D("0.70"),
        D("0.35"),
    )
    assert spent.total == D("1.93")

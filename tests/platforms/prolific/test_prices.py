"""Prolific's prices (platforms/prolific/prices.py), through the kernel's cost functions:
its platform fee, a share of the total (prolific.com/pricing: 33.3% academic, 42.8% otherwise)."""

from __future__ import annotations

from decimal import Decimal

from annotation.crowd.costs import provider_cost

D = Decimal


def test_prolific_fee_is_its_platform_rate_on_the_reward():
    # Academic rate 33.3%: $0.90 × 0.333 = $0.2997 -> $0.30; 2 groups × 3 places.
    cost = provider_cost("prolific", D("0.90"), assignments=3, hits=2)
    assert (cost.per_assignment_fee, cost.total) == (D("0.30"), D("7.20"))
    # Corporate rate 42.8%: $1.00 -> $0.43 (half-up from 0.428).
    assert provider_cost("prolific", D("1.00"), 1, 1, account_fee_rate=D("0.428")).per_assignment_fee == D("0.43")
    # No $0.01 minimum as on MTurk: $0.01 × 0.333 rounds to $0.00.
    assert provider_cost("prolific", D("0.01"), 1, 1).per_assignment_fee == D("0.00")


def test_prolific_fee_is_rounded_once_on_the_total_as_prolific_charges_it():
    # 39 places at $0.10: rewards $3.90, 33.3% of that is $1.2987 -> $1.30; $5.20 in all.
    # Rounded per place it would be 39 × $0.03 = $1.17 ($5.07), 13 cents short of the bill.
    cost = provider_cost("prolific", D("0.10"), assignments=39, hits=1)
    assert (cost.rewards, cost.fees, cost.total) == (D("3.90"), D("1.30"), D("5.20"))
    # The fee per place shown is that total's average, not a rounded rate.
    assert cost.per_assignment_fee == D("0.0333")
    # The corporate rate on 7 × $0.15 = $1.05: 42.8% = $0.4494 -> $0.45 (per place: 7 × $0.06 = $0.42).
    assert provider_cost("prolific", D("0.15"), 7, 1, account_fee_rate=D("0.428")).fees == D("0.45")

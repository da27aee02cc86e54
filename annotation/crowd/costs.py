"""What an annotation batch costs, in exact decimal dollars: the arithmetic, not the rates.

Each platform's prices are its own, reached through its provider (:func:`prices_of`); the arithmetic
they share lives here so that every price is rounded the same way. ``options``: the batch's provider
options; ``account_fee_rate``: the requester account's rate (``None``: the configured one). Money is
``Decimal`` throughout: floats cannot hold $0.07 exactly and budgets must not drift.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

CENT = Decimal("0.01")
#: No fee at all: a commission without a least amount.
NO_MINIMUM = Decimal("0.00")


@dataclass(frozen=True)
class Cost:
    """Cost of a set of assignments that all pay the same reward at the same commission rate."""

    per_assignment_reward: Decimal
    per_assignment_fee: Decimal
    rewards: Decimal
    fees: Decimal
    total: Decimal
    fee_rate: Decimal
    assignments_total: int
    #: Bonuses on top of the rewards (their fee is in ``fees``, and both in ``total``).
    bonuses: Decimal = Decimal("0")


def _money(value: Decimal | int | str) -> Decimal:
    """A reward as a Decimal; floats are refused because they are not exact amounts."""
    if isinstance(value, (bool, float)):
        raise TypeError("pass money as Decimal, int or str, not float")
    amount = Decimal(value)
    if not amount.is_finite() or amount <= 0:
        raise ValueError(f"reward must be a positive amount, got {value!r}")
    if amount != amount.quantize(CENT):
        raise ValueError(f"reward must be whole cents, got {value!r}")
    return amount


def assignment_fee(reward: Decimal, rate: Decimal, minimum: Decimal = NO_MINIMUM) -> Decimal:
    """Commission on one assignment: ``reward × rate`` rounded half-up to the cent, at least ``minimum``."""
    return max(minimum, (reward * rate).quantize(CENT, rounding=ROUND_HALF_UP))


def _cost(reward: Decimal, fee_each: Decimal, fees: Decimal, rate: Decimal, count: int) -> Cost:
    rewards = reward * count
    return Cost(reward, fee_each, rewards, fees, rewards + fees, rate, count)


def per_assignment_fees(reward: Decimal, rate: Decimal, count: int, minimum: Decimal = NO_MINIMUM) -> Cost:
    """A commission of ``rate`` on each of ``count`` assignments, rounded half-up to the cent each, at least ``minimum``."""
    fee = assignment_fee(reward, rate, minimum)
    return _cost(reward, fee, fee * count, rate, count)


def share_of_total(reward: Decimal, rate: Decimal, count: int) -> Cost:
    """A fee of ``rate`` of the rewards' total, rounded half-up to the cent once, on the total."""
    fees = (reward * count * rate).quantize(CENT, rounding=ROUND_HALF_UP)
    average = (fees / count if count else reward * rate).quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP)
    if average == average.quantize(CENT):
        average = average.quantize(CENT)  # whole cents shown as cents: $0.30, not $0.3000
    return _cost(reward, average, fees, rate, count)


def prices_of(provider: str):
    """The provider class that prices work and bonuses on ``provider`` (its ``work_cost`` and ``bonus_fees``)."""
    from annotation.crowd.providers.base import provider_class
    from core.lazy_registry import UnknownName

    try:
        return provider_class(provider)
    except UnknownName:
        raise ValueError(f"no prices known for provider {provider!r}") from None


def no_fees(reward: Decimal, count: int) -> Cost:
    """The rewards alone: no platform takes a fee."""
    return per_assignment_fees(reward, Decimal("0"), count)


def extra_assignments_cost(
    provider: str,
    reward: Decimal,
    extra_per_hit: Mapping[str, int] | int,
    assignments_per_hit: int,
    *,
    options: Mapping[str, Any] | None = None,
    account_fee_rate: Decimal | None = None,
) -> Cost:
    """Cost of extra assignments added to existing HITs at ``provider``'s price (``extra_per_hit``: HIT
    ids to the number to add, or the total; ``assignments_per_hit``: how many the HITs were created
    with); ``ValueError`` for an extension the platform would refuse."""
    amount = _money(reward)
    if assignments_per_hit < 1:
        raise ValueError("a HIT needs at least one assignment")
    return prices_of(provider).extra_assignments_cost(
        amount, extra_per_hit, assignments_per_hit, options=options or {}, account_fee_rate=account_fee_rate
    )


def provider_cost(
    provider: str,
    reward: Decimal,
    assignments: int,
    hits: int,
    *,
    options: Mapping[str, Any] | None = None,
    account_fee_rate: Decimal | None = None,
    bonuses: Decimal = Decimal("0"),
) -> Cost:
    """Cost of a batch of ``hits`` HIT groups × ``assignments`` on ``provider``; ``bonuses``: dollars of
    bonuses on top (a bonus rule's most), with their fee added to ``fees`` and ``total``."""
    _money(reward)
    if assignments < 1:
        raise ValueError("a HIT needs at least one assignment")
    if hits < 0:
        raise ValueError("hits cannot be negative")
    cost = work_cost(
        provider,
        reward,
        assignments * hits,
        assignments_per_hit=assignments,
        options=options,
        account_fee_rate=account_fee_rate,
    )
    if not bonuses:
        return cost
    extra = bonus_cost([Decimal(bonuses)], provider, account_fee_rate=account_fee_rate)
    return replace(cost, bonuses=extra.bonuses, fees=cost.fees + extra.fees, total=cost.total + extra.total)


@dataclass(frozen=True)
class BonusCost:
    """What paying some bonuses costs: the bonuses, the platform's fee on them, and the sum."""

    bonuses: Decimal
    fees: Decimal
    total: Decimal
    fee_rate: Decimal
    participants: int


def bonus_cost(amounts: Iterable[Decimal], provider: str, *, account_fee_rate: Decimal | None = None) -> BonusCost:
    """The cost of paying ``amounts`` (one per participant) as bonuses on ``provider``, at its fee on
    bonuses (``CrowdProvider.bonus_fees``). VAT, where it applies, on top."""
    values = [Decimal(a) for a in amounts]
    for value in values:
        if not value.is_finite() or value < 0 or value != value.quantize(CENT):
            raise ValueError(f"a bonus must be whole cents, at least 0 (got {value})")
    paid = [v for v in values if v > 0]
    bonuses = sum(paid, Decimal("0.00"))
    rate, fees = prices_of(provider).bonus_fees(paid, account_fee_rate=account_fee_rate)
    return BonusCost(bonuses=bonuses, fees=fees, total=bonuses + fees, fee_rate=rate, participants=len(paid))


def bonus_costs(
    charges: Iterable[Iterable[Decimal]], provider: str, *, account_fee_rate: Decimal | None = None
) -> BonusCost:
    """The cost of several bonus charges (each a group charged at once, its fee rounded on its own total), summed."""
    parts = [bonus_cost(group, provider, account_fee_rate=account_fee_rate) for group in charges]
    if not parts:
        return bonus_cost([], provider, account_fee_rate=account_fee_rate)
    sums = {name: sum((getattr(c, name) for c in parts), Decimal("0.00")) for name in ("bonuses", "fees", "total")}
    return BonusCost(**sums, fee_rate=parts[0].fee_rate, participants=sum(c.participants for c in parts))


@dataclass(frozen=True)
class Spent:
    """What a batch's work and bonuses cost on its platform: each part, its fee, and the sum."""

    rewards: Decimal
    reward_fees: Decimal
    bonuses: Decimal
    bonus_fees: Decimal
    total: Decimal


def work_cost(
    provider: str,
    reward: Decimal,
    answered: int,
    *,
    assignments_per_hit: int,
    options: Mapping[str, Any] | None = None,
    account_fee_rate: Decimal | None = None,
) -> Cost:
    """What ``answered`` assignments cost on ``provider``, fee included, at the price of HITs created with
    ``assignments_per_hit`` (extensions keep it)."""
    amount = _money(reward)
    if answered < 0:
        raise ValueError("answered assignments cannot be negative")
    return prices_of(provider).work_cost(
        amount,
        answered,
        assignments_per_hit=assignments_per_hit,
        options=options or {},
        account_fee_rate=account_fee_rate,
    )


def spent_on(
    provider: str, reward: Decimal, answered: int, *, bonus_charges: Iterable[Iterable[Decimal]] = (), **prices: Any
) -> Spent:
    """What a batch has spent: ``answered`` assignments (:func:`work_cost`, ``prices`` its keyword
    arguments) and the bonuses sent, ``bonus_charges`` grouped as the platform charged them, each group with its fee."""
    work = work_cost(provider, reward, answered, **prices)
    charged = bonus_costs(bonus_charges, provider, account_fee_rate=prices.get("account_fee_rate"))
    rewards, reward_fees = work.rewards.quantize(CENT), work.fees.quantize(CENT)
    total = rewards + reward_fees + charged.bonuses + charged.fees
    return Spent(rewards, reward_fees, charged.bonuses, charged.fees, total)

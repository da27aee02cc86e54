"""What an annotation batch costs, in exact decimal dollars: the arithmetic, not the rates.

Each platform's prices are its own, in its folder (``platforms/<name>/``), reached through its
provider (``CrowdProvider.work_cost``, ``bonus_fees``, ``extra_assignments_cost`` and ``comparison``,
found by :func:`prices_of` in the registry). This module holds the arithmetic they share -- a commission
rounded per assignment (:func:`per_assignment_fees`), a share of the total rounded once
(:func:`share_of_total`), no fee (:func:`no_fees`) -- and the figures built on them, so every price is
rounded the same way. ``options`` is the batch's provider options (the platform reads what changes its
price, e.g. a surcharge for a class of workers); ``account_fee_rate`` the requester account's own fee
rate where a platform prices by account (``None``: the platform's configured rate).

What a batch has **spent** (:func:`spent_on`; the one figure every page, card and text shows,
:func:`annotation.crowd.selectors.spent`) is priced by the same rules, never from the estimate:
the answered assignments at the provider's price, plus the bonuses sent, each charge with its fee.

Money is ``Decimal`` throughout: binary floats cannot represent $0.07 exactly
and budget checks must not drift.
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


def _cost(reward: Decimal, rate: Decimal, assignments_total: int, minimum: Decimal = NO_MINIMUM) -> Cost:
    fee = assignment_fee(reward, rate, minimum)
    rewards = reward * assignments_total
    fees = fee * assignments_total
    return Cost(
        per_assignment_reward=reward,
        per_assignment_fee=fee,
        rewards=rewards,
        fees=fees,
        total=rewards + fees,
        fee_rate=rate,
        assignments_total=assignments_total,
    )


def _share_of_total(reward: Decimal, rate: Decimal, assignments_total: int) -> Cost:
    """A fee that is ``rate`` of the total rewards, rounded half-up to the cent once, on the total."""
    rewards = reward * assignments_total
    fees = (rewards * rate).quantize(CENT, rounding=ROUND_HALF_UP)
    average = (fees / assignments_total if assignments_total else reward * rate).quantize(
        Decimal("0.0001"), rounding=ROUND_HALF_UP
    )
    if average == average.quantize(CENT):
        average = average.quantize(CENT)  # whole cents shown as cents: $0.30, not $0.3000
    return Cost(
        per_assignment_reward=reward,
        per_assignment_fee=average,
        rewards=rewards,
        fees=fees,
        total=rewards + fees,
        fee_rate=rate,
        assignments_total=assignments_total,
    )


def prices_of(provider: str):
    """The provider class that prices work and bonuses on ``provider`` (its ``work_cost`` and ``bonus_fees``).

    The rules are the provider's; this module keeps the arithmetic they share (a commission per
    assignment, a share of the total) so every price is rounded the same way.
    """
    from annotation.crowd.providers.base import provider_class
    from core.lazy_registry import UnknownName

    try:
        return provider_class(provider)
    except UnknownName:
        raise ValueError(f"no prices known for provider {provider!r}") from None


def per_assignment_fees(reward: Decimal, rate: Decimal, count: int, minimum: Decimal = NO_MINIMUM) -> Cost:
    """A commission of ``rate`` on each of ``count`` assignments, rounded half-up to the cent each, at least ``minimum``."""
    return _cost(reward, rate, count, minimum)


def share_of_total(reward: Decimal, rate: Decimal, count: int) -> Cost:
    """A fee of ``rate`` of the rewards' total, rounded half-up to the cent once, on the total."""
    return _share_of_total(reward, rate, count)


def no_fees(reward: Decimal, count: int) -> Cost:
    """The rewards alone: no platform takes a fee."""
    return _cost(reward, Decimal("0"), count, minimum=Decimal("0.00"))


def extra_assignments_cost(
    provider: str,
    reward: Decimal,
    extra_per_hit: Mapping[str, int] | int,
    assignments_per_hit: int,
    *,
    options: Mapping[str, Any] | None = None,
    account_fee_rate: Decimal | None = None,
) -> Cost:
    """Cost of escalation or a re-offer: extra assignments added to existing HITs, at ``provider``'s
    price (``extra_per_hit`` maps HIT ids to the number to add, or is the total when the split is not
    known yet; ``assignments_per_hit`` is how many the HITs were created with). The platform refuses
    (``ValueError``) an extension it would refuse (:meth:`CrowdProvider.extension_limit`)."""
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
    """Cost of a batch of ``hits`` HIT groups × ``assignments`` on ``provider`` (see the module docstring).

    ``bonuses``: dollars of bonuses on top (a bonus rule's most, :mod:`annotation.crowd.bonus_rules`),
    charged with the provider's fee on bonuses (:func:`bonus_cost`) and added to ``fees`` and ``total``.

    >>> provider_cost("local", Decimal("0.05"), 3, 100).total
    Decimal('15.00')
    """
    amount = _money(reward)
    if assignments < 1:
        raise ValueError("a HIT needs at least one assignment")
    if hits < 0:
        raise ValueError("hits cannot be negative")
    cost = prices_of(provider).work_cost(
        amount,
        assignments * hits,
        assignments_per_hit=assignments,
        options=options or {},
        account_fee_rate=account_fee_rate,
    )
    if not bonuses:
        return cost
    extra = bonus_cost([Decimal(bonuses)], provider, account_fee_rate=account_fee_rate)
    return replace(cost, bonuses=extra.bonuses, fees=cost.fees + extra.fees, total=cost.total + extra.total)


# -- bonuses (issue 32) ---------------------------------------------------------------------


@dataclass(frozen=True)
class BonusCost:
    """What paying some bonuses costs: the bonuses, the platform's fee on them, and the sum."""

    bonuses: Decimal
    fees: Decimal
    total: Decimal
    fee_rate: Decimal
    participants: int


def bonus_cost(amounts: Iterable[Decimal], provider: str, *, account_fee_rate: Decimal | None = None) -> BonusCost:
    """The cost of paying ``amounts`` (one per participant) as bonuses on ``provider``: each platform
    charges its fee on bonuses its own way (``CrowdProvider.bonus_fees``: a share of the total rounded
    once, a commission per bonus, or none in-house). VAT, where it applies, on top.

    >>> bonus_cost([Decimal("0.25"), Decimal("0.50")], "local").total
    Decimal('0.75')
    """
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
    """The cost of several bonus charges (each a group the platform charges at once, e.g. a Prolific
    bulk: :func:`bonus_cost` each, its fee rounded on its own total), summed.

    >>> bonus_costs([[Decimal("0.10")] * 3, [Decimal("0.10")]], "local").total
    Decimal('0.40')
    """
    parts = [bonus_cost(group, provider, account_fee_rate=account_fee_rate) for group in charges]
    if not parts:
        return bonus_cost([], provider, account_fee_rate=account_fee_rate)
    return BonusCost(
        bonuses=sum((c.bonuses for c in parts), Decimal("0.00")),
        fees=sum((c.fees for c in parts), Decimal("0.00")),
        total=sum((c.total for c in parts), Decimal("0.00")),
        fee_rate=parts[0].fee_rate,
        participants=sum(c.participants for c in parts),
    )


# -- what a batch has spent (issue 41) ------------------------------------------------------------
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
    """What ``answered`` assignments of a batch cost on ``provider``, the fee included (the platform's
    price for HITs created with ``assignments_per_hit``: extensions keep it).

    >>> work_cost("local", Decimal("0.10"), 3, assignments_per_hit=3).total
    Decimal('0.30')
    """
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
    provider: str,
    reward: Decimal,
    answered: int,
    *,
    assignments_per_hit: int,
    options: Mapping[str, Any] | None = None,
    account_fee_rate: Decimal | None = None,
    bonus_charges: Iterable[Iterable[Decimal]] = (),
) -> Spent:
    """What a batch has spent: ``answered`` assignments (:func:`work_cost`) and the bonuses sent,
    ``bonus_charges`` grouped as the platform charged them (a Prolific bulk, one MTurk bonus), each
    group with its fee (:func:`bonus_cost`).

    >>> spent_on("local", Decimal("0.10"), 3, assignments_per_hit=1,
    ...          bonus_charges=[[Decimal("0.10")] * 3]).total
    Decimal('0.60')
    """
    work = work_cost(
        provider,
        reward,
        answered,
        assignments_per_hit=assignments_per_hit,
        options=options,
        account_fee_rate=account_fee_rate,
    )
    charged = bonus_costs(bonus_charges, provider, account_fee_rate=account_fee_rate)
    bonuses, fees = charged.bonuses, charged.fees
    rewards = work.rewards.quantize(CENT)
    reward_fees = work.fees.quantize(CENT)
    return Spent(
        rewards=rewards,
        reward_fees=reward_fees,
        bonuses=bonuses,
        bonus_fees=fees,
        total=rewards + reward_fees + bonuses + fees,
    )

"""What an annotation batch costs, in exact decimal dollars, by provider.

Each platform's prices are its provider's (``CrowdProvider.work_cost`` and ``bonus_fees``, found
by :func:`prices_of` in the registry); this module holds the arithmetic they share and the
figures built on them. The rules, as the providers apply them:

- ``local`` (in-house annotators): the rewards only; no crowd platform takes a fee.
- ``mturk``: the commission below, plus the Masters surcharge of 5% of the reward when
  Masters are required (MTurk's pricing page: "an additional 5% of the reward").
- ``prolific``: Prolific's platform fee, a share of the total paid to participants (33.3%
  for academic and non-profit accounts, 42.8% otherwise, per prolific.com/pricing; VAT
  where it applies comes on top and is in Prolific's own cost calculator,
  ``platforms.prolific.services.quote``). Prolific charges the share of the total, so the fee is
  rounded half-up to the cent once per charge, on its total: a study's rewards (39 places at
  $0.10 pay $3.90 + 33.3% = $1.30 in fees, $5.20; not 39 × $0.03 = $1.17), and each bulk bonus
  payment (its set-up answers one ``fees`` figure for the whole bulk: three $0.10 bonuses in one
  bulk pay $0.30 + $0.10, not 3 × $0.03). ``per_assignment_fee`` is then that total's average
  per place (to 1/100 of a cent), for display.

What a batch has **spent** (:func:`spent_on`; the one figure every page, card and text shows,
:func:`annotation.crowd.selectors.spent`) is priced by the same rules, never from the estimate:
the answered assignments at the provider's price, plus the bonuses sent, each charge with its fee.

Amazon Mechanical Turk charges requesters a commission on top of the worker
reward: 20% of the reward, or 40% for HITs with 10 or more assignments, and at
least $0.01 per assignment. The commission is computed per assignment, so it is
rounded to the cent per assignment here (ROUND_HALF_UP) before multiplying --
multiplying first and rounding the batch total would under- or over-state the
bill by up to half a cent per assignment.

Money is ``Decimal`` throughout: binary floats cannot represent $0.07 exactly
and budget checks must not drift.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
MIN_FEE = Decimal("0.01")
BASE_FEE_RATE = Decimal("0.20")
LARGE_HIT_FEE_RATE = Decimal("0.40")
#: HITs with this many assignments or more pay the higher commission.
LARGE_HIT_ASSIGNMENTS = 10
MASTERS_FEE_RATE = Decimal("0.05")
PROLIFIC_ACADEMIC_FEE_RATE = Decimal("0.333")


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


def fee_rate(assignments_per_hit: int) -> Decimal:
    """MTurk's commission rate for a HIT with this many assignments."""
    return LARGE_HIT_FEE_RATE if assignments_per_hit >= LARGE_HIT_ASSIGNMENTS else BASE_FEE_RATE


def assignment_fee(reward: Decimal, rate: Decimal, minimum: Decimal = MIN_FEE) -> Decimal:
    """Commission on one assignment: ``reward × rate`` rounded half-up to the cent, at least ``minimum``."""
    return max(minimum, (reward * rate).quantize(CENT, rounding=ROUND_HALF_UP))


def _cost(reward: Decimal, rate: Decimal, assignments_total: int, minimum: Decimal = MIN_FEE) -> Cost:
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


def per_assignment_fees(reward: Decimal, rate: Decimal, count: int, minimum: Decimal = MIN_FEE) -> Cost:
    """A commission of ``rate`` on each of ``count`` assignments, rounded half-up to the cent each, at least ``minimum``."""
    return _cost(reward, rate, count, minimum)


def share_of_total(reward: Decimal, rate: Decimal, count: int) -> Cost:
    """A fee of ``rate`` of the rewards' total, rounded half-up to the cent once, on the total."""
    return _share_of_total(reward, rate, count)


def prolific_fee_rate(account_fee_rate: Decimal | str | None) -> Decimal:
    """The Prolific account's fee rate: its own where the account's records give one, else the
    academic rate (33.3%)."""
    return PROLIFIC_ACADEMIC_FEE_RATE if account_fee_rate is None else Decimal(account_fee_rate)


def prolific_work_cost(reward: Decimal, count: int, account_fee_rate: Decimal | None = None) -> Cost:
    """Prolific's price of ``count`` sessions at ``reward``: the fee a share of the total paid, rounded
    once (the Prolific study and its Task Builder alike)."""
    return share_of_total(reward, prolific_fee_rate(account_fee_rate), count)


def prolific_bonus_fees(paid: list[Decimal], account_fee_rate: Decimal | None = None) -> tuple[Decimal, Decimal]:
    """The same share on bonuses ("our regular pricing structure also applies to bonus payments"), on
    the total: ``(rate, fee)``."""
    rate = prolific_fee_rate(account_fee_rate)
    return rate, (sum(paid, Decimal("0.00")) * rate).quantize(CENT, rounding=ROUND_HALF_UP)


def no_fees(reward: Decimal, count: int) -> Cost:
    """The rewards alone: no platform takes a fee."""
    return _cost(reward, Decimal("0"), count, minimum=Decimal("0.00"))


def batch_cost(reward: Decimal, assignments: int, hits: int) -> Cost:
    """Cost of ``hits`` HITs with ``assignments`` assignments each, every assignment paying ``reward``.

    >>> batch_cost(Decimal("0.05"), 3, 100).total
    Decimal('18.00')
    """
    amount = _money(reward)
    if assignments < 1:
        raise ValueError("a HIT needs at least one assignment")
    if hits < 0:
        raise ValueError("hits cannot be negative")
    return _cost(amount, fee_rate(assignments), assignments * hits)


def extra_assignments_cost(
    reward: Decimal,
    extra_per_hit: Mapping[str, int] | int,
    assignments_per_hit: int,
    *,
    masters: bool = False,
) -> Cost:
    """Cost of escalation: extra assignments added to existing HITs (``CreateAdditionalAssignmentsForHIT``).

    ``extra_per_hit`` maps HIT ids to the number of assignments to add, or is
    the total number of extra assignments when the split is not known yet.
    ``assignments_per_hit`` is how many assignments the HITs were created with;
    ``masters`` adds the Masters surcharge.

    Fee rate choice: MTurk refuses to extend a HIT created with fewer than 10
    assignments to 10 or more (``InvalidMaximumAssignmentsIncrease``), so the
    40% rate can never be triggered by escalation; it applies only to HITs that
    were created with 10 or more assignments. Extra assignments are therefore
    charged at the rate of the original HIT, and an extension that would cross
    the 10-assignment line raises ``ValueError`` -- escalate such items in a
    new HIT instead. With a bare total we cannot see the per-HIT split, so we
    only refuse the case where any extension crosses the line (HITs of 9).
    """
    amount = _money(reward)
    if assignments_per_hit < 1:
        raise ValueError("a HIT needs at least one assignment")
    rate = fee_rate(assignments_per_hit) + (MASTERS_FEE_RATE if masters else 0)
    crosses = assignments_per_hit < LARGE_HIT_ASSIGNMENTS

    if isinstance(extra_per_hit, Mapping):
        negative = sorted(hit for hit, extra in extra_per_hit.items() if extra < 0)
        if negative:
            raise ValueError(f"negative extra assignments for HIT(s): {', '.join(map(str, negative))}")
        if crosses:
            over = sorted(
                str(hit) for hit, extra in extra_per_hit.items() if assignments_per_hit + extra >= LARGE_HIT_ASSIGNMENTS
            )
            if over:
                raise ValueError(
                    f"MTurk cannot extend a HIT of {assignments_per_hit} assignments to {LARGE_HIT_ASSIGNMENTS} or more "
                    f"(HIT(s) {', '.join(over)}); publish a new HIT instead"
                )
        total = sum(int(extra) for extra in extra_per_hit.values())
    else:
        total = int(extra_per_hit)
        if total < 0:
            raise ValueError("extra assignments cannot be negative")
        if crosses and total > 0 and assignments_per_hit + 1 >= LARGE_HIT_ASSIGNMENTS:
            raise ValueError(
                f"MTurk cannot extend a HIT of {assignments_per_hit} assignments to {LARGE_HIT_ASSIGNMENTS} or more"
            )
    return _cost(amount, rate, total)


def provider_cost(
    provider: str,
    reward: Decimal,
    assignments: int,
    hits: int,
    *,
    masters: bool = False,
    prolific_fee_rate: Decimal = PROLIFIC_ACADEMIC_FEE_RATE,
    bonuses: Decimal = Decimal("0"),
) -> Cost:
    """Cost of a batch of ``hits`` HIT groups × ``assignments`` on ``provider`` (see the module docstring).

    ``bonuses``: dollars of bonuses on top (a bonus rule's most, :mod:`annotation.crowd.bonus_rules`),
    charged with the provider's fee on bonuses (:func:`bonus_cost`) and added to ``fees`` and ``total``.

    >>> provider_cost("local", Decimal("0.05"), 3, 100).total
    Decimal('15.00')
    >>> provider_cost("mturk", Decimal("1.00"), 3, 1, masters=True).per_assignment_fee
    Decimal('0.25')
    >>> provider_cost("prolific", Decimal("0.10"), 39, 1).total
    Decimal('5.20')
    """
    amount = _money(reward)
    if assignments < 1:
        raise ValueError("a HIT needs at least one assignment")
    if hits < 0:
        raise ValueError("hits cannot be negative")
    cost = prices_of(provider).work_cost(
        amount, assignments * hits, assignments_per_hit=assignments, masters=masters, account_fee_rate=prolific_fee_rate
    )
    if not bonuses:
        return cost
    extra = bonus_cost([Decimal(bonuses)], provider, prolific_fee_rate=prolific_fee_rate)
    return replace(cost, bonuses=extra.bonuses, fees=cost.fees + extra.fees, total=cost.total + extra.total)


# -- bonuses (issue 32) ---------------------------------------------------------------------
#: MTurk's commission on a bonus: 20% of it (its pricing page), at least $0.01 per bonus.
MTURK_BONUS_FEE_RATE = Decimal("0.20")


@dataclass(frozen=True)
class BonusCost:
    """What paying some bonuses costs: the bonuses, the platform's fee on them, and the sum."""

    bonuses: Decimal
    fees: Decimal
    total: Decimal
    fee_rate: Decimal
    participants: int


def bonus_cost(
    amounts: Iterable[Decimal], provider: str = "prolific", *, prolific_fee_rate: Decimal = PROLIFIC_ACADEMIC_FEE_RATE
) -> BonusCost:
    """The cost of paying ``amounts`` (one per participant) as bonuses on ``provider``.

    Prolific charges its service fee on bonuses as on rewards (its help centre: "our regular
    pricing structure also applies to bonus payments"), a share of the total: rounded
    half-up once, on the total, as :func:`provider_cost` does for rewards. MTurk: 20% of each
    bonus, at least $0.01, rounded per bonus. In-house: no fee. VAT, where it applies, on top.

    >>> bonus_cost([Decimal("0.25"), Decimal("0.50")]).total
    Decimal('1.00')
    """
    values = [Decimal(a) for a in amounts]
    for value in values:
        if not value.is_finite() or value < 0 or value != value.quantize(CENT):
            raise ValueError(f"a bonus must be whole cents, at least 0 (got {value})")
    paid = [v for v in values if v > 0]
    bonuses = sum(paid, Decimal("0.00"))
    rate, fees = prices_of(provider).bonus_fees(paid, account_fee_rate=prolific_fee_rate)
    return BonusCost(bonuses=bonuses, fees=fees, total=bonuses + fees, fee_rate=rate, participants=len(paid))


def bonus_costs(
    charges: Iterable[Iterable[Decimal]],
    provider: str = "prolific",
    *,
    prolific_fee_rate: Decimal = PROLIFIC_ACADEMIC_FEE_RATE,
) -> BonusCost:
    """The cost of several bonus charges (each a group the platform charges at once, e.g. a Prolific
    bulk: :func:`bonus_cost` each, its fee rounded on its own total), summed.

    >>> bonus_costs([[Decimal("0.10")] * 3, [Decimal("0.10")]]).total  # $0.30 + $0.10, $0.10 + $0.03
    Decimal('0.53')
    """
    parts = [bonus_cost(group, provider, prolific_fee_rate=prolific_fee_rate) for group in charges]
    if not parts:
        return bonus_cost([], provider, prolific_fee_rate=prolific_fee_rate)
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
    masters: bool = False,
    prolific_fee_rate: Decimal = PROLIFIC_ACADEMIC_FEE_RATE,
) -> Cost:
    """What ``answered`` assignments of a batch cost on ``provider``, the fee included: MTurk's
    commission per assignment at the rate of the batch's HITs (extensions keep it), Prolific's
    share of the rewards' total rounded once, nothing on top in-house.

    >>> work_cost("prolific", Decimal("0.10"), 3, assignments_per_hit=3).total
    Decimal('0.40')
    """
    amount = _money(reward)
    if answered < 0:
        raise ValueError("answered assignments cannot be negative")
    return prices_of(provider).work_cost(
        amount, answered, assignments_per_hit=assignments_per_hit, masters=masters, account_fee_rate=prolific_fee_rate
    )


def spent_on(
    provider: str,
    reward: Decimal,
    answered: int,
    *,
    assignments_per_hit: int,
    masters: bool = False,
    prolific_fee_rate: Decimal = PROLIFIC_ACADEMIC_FEE_RATE,
    bonus_charges: Iterable[Iterable[Decimal]] = (),
) -> Spent:
    """What a batch has spent: ``answered`` assignments (:func:`work_cost`) and the bonuses sent,
    ``bonus_charges`` grouped as the platform charged them (a Prolific bulk, one MTurk bonus), each
    group with its fee (:func:`bonus_cost`).

    >>> spent_on("prolific", Decimal("0.10"), 3, assignments_per_hit=1,
    ...          bonus_charges=[[Decimal("0.10")] * 3]).total
    Decimal('0.80')
    """
    work = work_cost(
        provider,
        reward,
        answered,
        assignments_per_hit=assignments_per_hit,
        masters=masters,
        prolific_fee_rate=prolific_fee_rate,
    )
    charged = bonus_costs(bonus_charges, provider, prolific_fee_rate=prolific_fee_rate)
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

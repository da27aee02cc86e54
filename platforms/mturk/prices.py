"""Amazon Mechanical Turk's prices and its 10-assignment rule, written once (pure: no Django).

MTurk charges requesters a commission on top of the worker reward: 20% of the reward, or 40%
for HITs with 10 or more assignments, and at least $0.01 per assignment; Masters add 5% of the
reward (its pricing page: "an additional 5% of the reward"). The commission is computed per
assignment, so it is rounded to the cent per assignment (ROUND_HALF_UP) before multiplying --
multiplying first and rounding the batch total would under- or over-state the bill by up to
half a cent per assignment. A bonus pays 20% of it, at least $0.01, rounded per bonus.

MTurk refuses to extend a HIT created with fewer than 10 assignments to 10 or more
(``InvalidMaximumAssignmentsIncrease``), so the 40% rate can never be triggered by escalation:
extra assignments pay the rate of the HIT they extend (:func:`extra_assignments_cost`), and
:func:`extension_limit` is what the kernel's escalation, calibration and routing ask.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from annotation.crowd.costs import Cost, assignment_fee, per_assignment_fees
from annotation.crowd.providers.base import extra_count

MIN_FEE = Decimal("0.01")
BASE_FEE_RATE = Decimal("0.20")
LARGE_HIT_FEE_RATE = Decimal("0.40")
#: HITs with this many assignments or more pay the higher commission, and a HIT created with fewer
#: can never be extended to this many.
LARGE_HIT_ASSIGNMENTS = 10
MASTERS_FEE_RATE = Decimal("0.05")
#: MTurk's commission on a bonus: 20% of it (its pricing page), at least $0.01 per bonus.
BONUS_FEE_RATE = Decimal("0.20")


def fee_rate(assignments_per_hit: int, *, masters: bool = False) -> Decimal:
    """MTurk's commission rate for a HIT with this many assignments (plus the Masters surcharge)."""
    rate = LARGE_HIT_FEE_RATE if assignments_per_hit >= LARGE_HIT_ASSIGNMENTS else BASE_FEE_RATE
    return rate + (MASTERS_FEE_RATE if masters else 0)


def extension_limit(assignments_per_hit: int) -> int | None:
    """The most assignments a HIT created with ``assignments_per_hit`` may be extended to (``None``: any).

    >>> extension_limit(3), extension_limit(10)
    (9, None)
    """
    return LARGE_HIT_ASSIGNMENTS - 1 if assignments_per_hit < LARGE_HIT_ASSIGNMENTS else None


def work_cost(reward: Decimal, count: int, *, assignments_per_hit: int, masters: bool = False) -> Cost:
    """``count`` assignments of HITs created with ``assignments_per_hit``: the commission per assignment.

    >>> work_cost(Decimal("1.00"), 3, assignments_per_hit=3, masters=True).per_assignment_fee
    Decimal('0.25')
    """
    return per_assignment_fees(reward, fee_rate(assignments_per_hit, masters=masters), count, MIN_FEE)


def bonus_fees(paid: list[Decimal]) -> tuple[Decimal, Decimal]:
    """20% of each bonus, at least $0.01, rounded per bonus: ``(rate, fee)``."""
    return BONUS_FEE_RATE, sum((assignment_fee(v, BONUS_FEE_RATE, MIN_FEE) for v in paid), Decimal("0.00"))


def extra_assignments_cost(
    reward: Decimal, extra_per_hit: Mapping[str, int] | int, assignments_per_hit: int, *, masters: bool = False
) -> Cost:
    """Cost of extra assignments added to existing HITs (``CreateAdditionalAssignmentsForHIT``), at the
    rate of the HITs they extend; an extension across the 10-assignment line raises ``ValueError``
    (escalate such items in a new HIT instead). With a bare total the per-HIT split is unknown, so only
    the case where any extension crosses the line (HITs of 9) is refused."""
    if assignments_per_hit < 1:
        raise ValueError("a HIT needs at least one assignment")
    total = extra_count(extra_per_hit)
    limit = extension_limit(assignments_per_hit)
    if limit is not None:
        if isinstance(extra_per_hit, Mapping):
            over = sorted(str(hit) for hit, extra in extra_per_hit.items() if assignments_per_hit + extra > limit)
        else:
            over = ["?"] if total > 0 and assignments_per_hit + 1 > limit else []
        if over:
            which = f" (HIT(s) {', '.join(over)})" if over != ["?"] else ""
            raise ValueError(
                f"MTurk cannot extend a HIT of {assignments_per_hit} assignments to {limit + 1} or more{which}; "
                "publish a new HIT instead"
            )
    return per_assignment_fees(reward, fee_rate(assignments_per_hit, masters=masters), total, MIN_FEE)

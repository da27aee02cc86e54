"""Amazon Mechanical Turk's prices and its 10-assignment rule, written once (pure: no Django).

The commission (its pricing page): 20% of the reward, 40% for HITs of 10 or more assignments, at least
$0.01 per assignment, Masters 5% more; charged per assignment, so rounded to the cent per assignment
before multiplying. MTurk refuses to extend a HIT of fewer than 10 assignments to 10 or more, so
escalation never triggers the 40% rate (:func:`extension_limit`, :func:`extra_assignments_cost`).
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
    """Cost of extra assignments added to existing HITs, at their rate; ``ValueError`` for an extension
    across the 10-assignment line (with a bare total: HITs of 9, where any extension crosses it)."""
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

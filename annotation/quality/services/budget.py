"""What re-offers and escalations may still spend on a batch (``Batch.extra_budget``, USD; ``None``: no
limit). Every extra place counts at its full price when recorded, even one whose rejected predecessor
was never paid: the account never depends on a review being overturned later."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from django.db.models import Sum

from annotation.crowd.costs import Cost, extra_assignments_cost
from annotation.crowd.providers.base import provider_class
from annotation.models import Batch
from core.errors import ServiceError


def extra_cost(batch: Batch, extra_per_hit: Mapping[str, int] | int) -> Cost:
    """What more assignments on the batch's HITs cost (:func:`extra_assignments_cost`); an extension the
    platform refuses is a ``ServiceError``."""
    options = provider_class(batch.provider).options_of(batch)
    try:
        return extra_assignments_cost(
            batch.provider, batch.reward, extra_per_hit, batch.assignments_per_query, options=options
        )
    except ValueError as exc:
        raise ServiceError(str(exc)) from None


def extra_assignment_price(batch: Batch) -> Decimal:
    """Reward + fee of one more assignment on one of the batch's HITs."""
    return extra_cost(batch, 1).total


def extra_spent(batch: Batch) -> Decimal:
    """USD recorded for escalations and re-offers of the batch so far (applied or about to be)."""
    escalated = batch.escalations.aggregate(total=Sum("cost"))["total"] or Decimal("0")
    reoffered = batch.reoffers.aggregate(total=Sum("cost"))["total"] or Decimal("0")
    return (Decimal(escalated) + Decimal(reoffered)).quantize(Decimal("0.01"))


def budget_left(batch: Batch) -> Decimal | None:
    """What extras may still add (never negative); ``None`` when the batch has no budget."""
    if batch.extra_budget is None:
        return None
    return max(Decimal("0"), batch.extra_budget - extra_spent(batch))


def affordable(batch: Batch, wanted: int) -> int:
    """How many of ``wanted`` extra assignments the budget still pays for."""
    left = budget_left(batch)
    if left is None:
        return wanted
    price = extra_assignment_price(batch)
    return min(wanted, int(left // price)) if price > 0 else wanted


def set_extra_budget(batch: Batch, budget: Decimal | None) -> None:
    """Set (or with ``None`` remove) what re-offers and escalations may add to the estimate."""
    if budget is not None and (not Decimal(budget).is_finite() or budget < 0):
        raise ServiceError(f"the budget must be an amount of dollars, not negative (got {budget})")
    Batch.objects.filter(pk=batch.pk).update(extra_budget=budget)
    batch.extra_budget = budget

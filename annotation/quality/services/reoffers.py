"""Rejected work offered again, so that every HIT gets the answers it was made for.

Where the place is gone for good (``reoffers_rejected``), one place per rejected assignment is added
within the extra budget. A ``Reoffer`` row is committed before the provider is called, with a request
token derived from it: an interrupted run finishes the call, never adds a second place.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import F

from annotation.crowd.providers import CrowdProvider
from annotation.crowd.providers.base import provider_class
from annotation.models import Assignment, Batch, Hit, Reoffer
from annotation.quality.services.budget import affordable, extra_assignment_price
from core.errors import ServiceError


@dataclass
class ReofferResult:
    offered: int = 0
    cost: Decimal = Decimal("0")
    #: Rejected places left without a new one because the budget ran out.
    over_budget: int = 0
    #: Why no place could be added at all, or "".
    refused: str = ""


def rejected_without_reoffer(batch: Batch):
    """Rejected MTurk assignments whose place was not offered again yet."""
    return (
        Assignment.objects.filter(hit__batch=batch, status=Assignment.Status.REJECTED, reoffer__isnull=True)
        .exclude(hit__provider_id=None)
        .select_related("hit")
        .order_by("reviewed_at", "pk")
    )


def reoffer_rejected(batch: Batch, provider: CrowdProvider) -> ReofferResult:
    """Offer every rejected MTurk place again, within the budget; finish interrupted re-offers first."""
    if not provider_class(batch.provider).reoffers_rejected or batch.status != Batch.Status.PUBLISHED:
        return ReofferResult()
    finished = 0
    for reoffer in batch.reoffers.filter(applied=False).select_related("hit"):
        provider.add_assignments(reoffer.hit, 1, reoffer.unique_token)
        Reoffer.objects.filter(pk=reoffer.pk).update(applied=True)
        finished += 1
    result = offer_again(batch, provider, list(rejected_without_reoffer(batch)))
    result.offered += finished
    return result


def offer_again(
    batch: Batch, provider: CrowdProvider, waiting: list[Assignment], *, widen: bool = False
) -> ReofferResult:
    """Offer the place of each of ``waiting`` again, within the extra budget, through a ``Reoffer``
    committed before the provider is called; ``widen``: the answer keeps its place (a calibration sample's
    held-out one), so its HIT wants one answer more, raised in the same transaction."""
    result = ReofferResult()
    if not waiting:
        return result
    try:
        price = extra_assignment_price(batch)
    except ServiceError as exc:  # the rest of the sync goes on; the command says why
        result.refused = str(exc)
        return result
    paid_for = affordable(batch, len(waiting))
    result.over_budget = len(waiting) - paid_for
    for assignment in waiting[:paid_for]:
        try:
            with transaction.atomic():
                reoffer = Reoffer.objects.create(batch=batch, hit=assignment.hit, assignment=assignment, cost=price)
                if widen:
                    Hit.objects.filter(pk=assignment.hit_id).update(max_assignments=F("max_assignments") + 1)
        except IntegrityError:
            continue  # recorded by a concurrent run, which calls the provider for it
        if widen:
            assignment.hit.refresh_from_db(fields=["max_assignments"])
        provider.add_assignments(assignment.hit, 1, reoffer.unique_token)
        Reoffer.objects.filter(pk=reoffer.pk).update(applied=True)
        result.offered += 1
        result.cost += price
    return result

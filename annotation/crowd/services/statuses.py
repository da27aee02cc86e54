"""HIT statuses that agree with their assignments, and so with their batch's status.

A published HIT is ``complete`` exactly when its answered assignments reach ``max_assignments``; a
batch is ``completed`` once every HIT has all its assignments approved. Every service that changes
what a HIT has answered settles them in the same transaction.
"""

from __future__ import annotations

from django.db.models import Count, F, Q

from annotation.models import Assignment, Batch, Hit

ANSWERED = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED)


def settle_hit_statuses(batch: Batch) -> int:
    """Mark the batch's full HITs complete and reopen those that lost an answer; returns HITs changed."""
    live = batch.hits.filter(status__in=[Hit.Status.OPEN, Hit.Status.COMPLETE])
    full = list(
        live.annotate(answered=Count("assignments", filter=Q(assignments__status__in=ANSWERED)))
        .filter(answered__gte=F("max_assignments"))
        .values_list("pk", flat=True)
    )
    changed = Hit.objects.filter(pk__in=full, status=Hit.Status.OPEN).update(status=Hit.Status.COMPLETE)
    changed += live.filter(status=Hit.Status.COMPLETE).exclude(pk__in=full).update(status=Hit.Status.OPEN)
    return changed


def settle_hit_status(hit: Hit, *, answered: int | None = None) -> bool:
    """:func:`settle_hit_statuses` for one HIT, reading only its assignments (``answered``: when the caller
    counted them); returns whether it changed."""
    if hit.status not in (Hit.Status.OPEN, Hit.Status.COMPLETE):
        return False
    if answered is None:
        answered = Assignment.objects.filter(hit=hit, status__in=ANSWERED).count()
    status = Hit.Status.COMPLETE if answered >= hit.max_assignments else Hit.Status.OPEN
    if status == hit.status:
        return False
    changed = Hit.objects.filter(pk=hit.pk, status__in=[Hit.Status.OPEN, Hit.Status.COMPLETE]).update(status=status)
    hit.status = status
    return bool(changed)


def complete_if_done(batch: Batch) -> bool:
    """A published batch is completed once every HIT has all its assignments approved."""
    if batch.status != Batch.Status.PUBLISHED:
        return batch.status == Batch.Status.COMPLETED
    short = (
        batch.hits.annotate(approved=Count("assignments", filter=Q(assignments__status=Assignment.Status.APPROVED)))
        .exclude(approved__gte=F("max_assignments"))
        .exists()
    )
    if short or not batch.hits.exists():
        return False
    Batch.objects.filter(pk=batch.pk).update(status=Batch.Status.COMPLETED)
    batch.status = Batch.Status.COMPLETED
    return True

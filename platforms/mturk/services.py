"""Requester chores on MTurk outside a batch's life cycle (``manage.py mturk_admin``). Real worker ids are
read from ``WorkerIdentity`` here and nowhere else: the researcher names workers by pseudonym.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from annotation.models import Assignment, Batch, BonusPayment, Escalation, Hit, Provider, Worker
from core.errors import ServiceError, StateError
from platforms.mturk.provider import MTurkProvider


def default_mturk():
    return MTurkProvider().mturk


def _mturk_hit(hit: Hit) -> None:
    if hit.batch.provider != Provider.MTURK or not hit.provider_id:
        raise ServiceError(f"{hit} is not a published MTurk HIT")


def account_balance(mturk=None) -> Decimal:
    return Decimal(str((mturk or default_mturk()).account_balance()))


def expire_hit(hit: Hit, mturk=None) -> None:
    """Stop offering one HIT (work in progress can still be submitted)."""
    _mturk_hit(hit)
    (mturk or default_mturk()).expire_hit(hit.provider_id)
    Hit.objects.filter(pk=hit.pk).update(status=Hit.Status.EXPIRED)


def extend_hit(hit: Hit, until: dt.datetime, mturk=None) -> None:
    """Offer a HIT until ``until`` (also re-opens an expired HIT)."""
    _mturk_hit(hit)
    if until <= timezone.now():
        raise ServiceError("the new expiry must be in the future")
    (mturk or default_mturk()).extend_hit(hit.provider_id, until)
    Hit.objects.filter(pk=hit.pk).update(status=Hit.Status.OPEN)


def add_assignments(hit: Hit, count: int, mturk=None) -> Escalation:
    """Ask ``count`` more workers to do a HIT, recorded like an escalation (same idempotency)."""
    _mturk_hit(hit)
    if count < 1:
        raise ServiceError("add at least one assignment")
    if hit.max_assignments < 10 <= hit.max_assignments + count:
        raise ServiceError("MTurk cannot extend a HIT created with fewer than 10 assignments to 10 or more")
    with transaction.atomic():
        escalation = Escalation.objects.create(
            batch=hit.batch,
            hit=hit,
            added=count,
            assignments_before=hit.max_assignments,
            disputed=[],
            cost=Decimal(hit.batch.reward) * count,
        )
        Hit.objects.filter(pk=hit.pk).update(max_assignments=hit.max_assignments + count)
    (mturk or default_mturk()).add_assignments(hit.provider_id, count, escalation.unique_token)
    Escalation.objects.filter(pk=escalation.pk).update(applied=True)
    return escalation


def send_bonus(assignment: Assignment, amount: Decimal | str, reason: str, mturk=None) -> BonusPayment:
    """Pay a bonus for one assignment, exactly once: the ``BonusPayment`` row is committed before ``SendBonus``,
    whose token (one per assignment) makes a retry a success, not a second payment. A second bonus, or one
    over ``BONUS_MAX_PER_PARTICIPANT_USD`` for the worker in the batch, is refused."""
    from annotation.crowd.services.batch_settings import bonus_max_per_participant, check_amount

    if assignment.worker.provider != Provider.MTURK:
        raise ServiceError("bonuses are paid through MTurk; this is not an MTurk assignment")
    if not reason.strip():
        raise ServiceError("MTurk shows workers the reason for a bonus; give one")
    amount = check_amount(amount, "bonus amount", minimum="0.01", maximum="999999.99")
    batch = assignment.hit.batch
    worker_id = assignment.worker.identity.external_id
    with transaction.atomic():
        row = BonusPayment.objects.select_for_update().filter(assignment=assignment).first()
        if row is not None and (row.state == BonusPayment.State.PAID or row.amount != amount):
            raise StateError(
                f"assignment {assignment.provider_assignment_id} has a bonus of ${row.amount} already ({row.state})"
            )
        if row is None:
            earned = BonusPayment.objects.filter(batch=batch, participant_id=worker_id).aggregate(total=Sum("amount"))
            most = bonus_max_per_participant()
            if (earned["total"] or Decimal("0")) + amount > most:
                raise ServiceError(
                    f"bonus amount: ${amount} would bring this worker's bonuses from batch {batch.name!r} to "
                    f"${(earned['total'] or Decimal('0')) + amount}, above the maximum of ${most} per participant "
                    "(setting BONUS_MAX_PER_PARTICIPANT_USD)"
                )
            row = BonusPayment.objects.create(
                batch=batch,
                assignment=assignment,
                participant_id=worker_id,
                submission_id=assignment.provider_assignment_id,
                amount=amount,
                reason=reason[:200],
                state=BonusPayment.State.PAYING,
                pay_attempted=timezone.now(),
            )
    (mturk or default_mturk()).send_bonus(
        worker_id=worker_id,
        assignment_id=assignment.provider_assignment_id,
        amount=amount,
        reason=reason,
        unique_request_token=f"bonus-{assignment.provider_assignment_id}"[:64],
    )
    BonusPayment.objects.filter(pk=row.pk).update(state=BonusPayment.State.PAID, paid_at=timezone.now())
    row.refresh_from_db()
    return row


def block_worker(worker: Worker, reason: str, mturk=None) -> None:
    """Block a worker from all our HITs (MTurk) and from local hand-outs."""
    if not reason.strip():
        raise ServiceError("MTurk shows workers the reason for a block; give one")
    if worker.provider == Provider.MTURK:
        (mturk or default_mturk()).block_worker(worker.identity.external_id, reason)
    Worker.objects.filter(pk=worker.pk).update(blocked=True)


def find_hit(batch: Batch, position: int) -> Hit:
    try:
        return batch.hits.select_related("batch").get(position=position)
    except Hit.DoesNotExist:
        raise ServiceError(f"batch {batch.name!r} has no HIT {position}") from None

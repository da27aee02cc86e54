"""Fetching assignments from the provider, recording each once, reviewing them."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import IntegrityError, transaction

from annotation.crowd.providers import CrowdProvider, RemoteAssignment, get_provider
from annotation.crowd.services.answers import record_answers, review_assignment
from annotation.crowd.services.locking import one_per_batch
from annotation.crowd.services.pseudonyms import worker_for
from annotation.crowd.services.statuses import complete_if_done, settle_hit_statuses
from annotation.models import Assignment, Batch, Hit, Provider
from core.errors import ServiceError
from core.models import Job
from core.progress import Progress


@dataclass
class SyncResult:
    new: int = 0
    updated: int = 0
    invalid: int = 0
    approved: int = 0
    rejected: int = 0
    kept: int = 0
    completed: bool = False
    #: Prolific only: submissions read, places freed, bonuses paid or unconfirmed, study places.
    prolific: object | None = None
    #: MTurk: rejected places offered again, and those the budget left out.
    reoffered: int = 0
    reoffer_over_budget: int = 0
    reoffer_refused: str = ""
    #: Pseudonyms newly flagged or blocked by the batch's thresholds.
    flagged: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    #: Assignments added by this sync's automatic escalation round (``Batch.escalate_until``).
    escalated: int = 0


def _record_remote(hit: Hit, remote: RemoteAssignment, provider_name: str) -> tuple[Assignment, bool]:
    """Store a fetched assignment unless it is already stored; returns it and whether it was new."""
    existing = Assignment.objects.filter(provider_assignment_id=remote.assignment_id).first()
    if existing is not None:
        return existing, False
    worker = worker_for(provider_name, remote.worker_id)
    try:
        with transaction.atomic():
            assignment = Assignment.objects.create(
                hit=hit,
                provider_assignment_id=remote.assignment_id,
                worker=worker,
                accepted_at=remote.accepted_at,
            )
            record_answers(
                assignment, remote.answers, remote.raw_answer, status=remote.status, submitted_at=remote.submitted_at
            )
    except IntegrityError:
        # A concurrent sync stored it first -- or the provider reports a second assignment of
        # the same worker on this HIT, which the (hit, worker) constraint refuses to store.
        stored = Assignment.objects.filter(provider_assignment_id=remote.assignment_id).first()
        if stored is None:
            raise ServiceError(
                f"{remote.assignment_id}: worker {worker.pseudonym} already has an assignment on HIT "
                f"{hit.provider_id}; not stored twice"
            ) from None
        return stored, False
    return assignment, True


@one_per_batch("A sync")
def sync_batch(
    batch: Batch,
    provider: CrowdProvider | None = None,
    *,
    approve_all: bool = False,
    job: Job | None = None,
    bar: bool = False,
) -> SyncResult:
    """Fetch every HIT's assignments, store new ones, follow status changes, review the submitted.

    Safe to run any number of times: an assignment is stored once (its provider id is
    unique) and an assignment already approved or rejected is not reviewed again.
    """
    if batch.status == Batch.Status.DRAFT:
        raise ServiceError(f"batch {batch.name!r} is not published yet")
    provider = provider or get_provider(batch.provider)
    if batch.provider == Provider.PROLIFIC:
        from annotation.prolific.services import sync_prolific

        found = sync_prolific(batch, provider, approve_all=approve_all, job=job, bar=bar)
        settle_hit_statuses(batch)  # rejected and returned submissions free their places
        result = SyncResult(
            updated=found.updated + found.freed,
            approved=found.approved,
            rejected=found.rejected,
            kept=found.kept,
            completed=found.completed,
            prolific=found,
        )
        _close_the_loop(batch, provider, result)
        result.completed = batch.status == Batch.Status.COMPLETED  # an escalation round reopens it
        if result.completed:
            from annotation.prolific.services import close_study

            found.stopped = close_study(batch, provider)  # nobody more is sent to a finished batch
        return result
    result = SyncResult()
    hits = list(batch.hits.exclude(provider_id=None).select_related("batch").order_by("position"))
    with Progress(f"Syncing {batch.name}", total=len(hits), unit="HIT", job=job, bar=bar) as progress:
        for hit in hits:
            for remote in provider.fetch_assignments(hit):
                assignment, created = _record_remote(hit, remote, provider.name)
                if created:
                    result.new += 1
                    result.invalid += assignment.valid is False
                elif assignment.status == Assignment.Status.SUBMITTED and remote.status != assignment.status:
                    # Reviewed elsewhere (the requester website) or auto-approved by MTurk.
                    Assignment.objects.filter(pk=assignment.pk).update(status=remote.status)
                    result.updated += 1
            progress.advance()
    submitted = Assignment.objects.filter(hit__batch=batch, status=Assignment.Status.SUBMITTED).select_related(
        "hit__batch"
    )
    for assignment in submitted:
        outcome = review_assignment(assignment, provider, approve_all=approve_all)
        setattr(result, outcome, getattr(result, outcome) + 1)
    _close_the_loop(batch, provider, result)
    settle_hit_statuses(batch)
    result.completed = complete_if_done(batch)
    return result


def _close_the_loop(batch: Batch, provider: CrowdProvider, result: SyncResult) -> None:
    """After the review: offer rejected places again, apply the thresholds, run an escalation round.

    Each step is idempotent on its own (see :mod:`.reoffers`, :mod:`.thresholds`,
    :mod:`.escalation`), so a sync interrupted anywhere is finished by the next.
    """
    from annotation.quality.services.escalation import escalation_round
    from annotation.quality.services.reoffers import reoffer_rejected
    from annotation.quality.services.thresholds import apply_thresholds

    offered = reoffer_rejected(batch, provider)
    result.reoffered, result.reoffer_over_budget = offered.offered, offered.over_budget
    result.reoffer_refused = offered.refused
    judged = apply_thresholds(batch, provider)
    result.flagged, result.blocked = judged.flagged, judged.blocked
    if batch.escalate_until and batch.status in (Batch.Status.PUBLISHED, Batch.Status.COMPLETED):
        escalations = escalation_round(batch, batch.escalation_cap, provider, until=batch.escalate_until)
        result.escalated = sum(e.added for e in escalations)

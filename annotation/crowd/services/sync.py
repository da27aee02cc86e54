"""Fetching assignments from the provider, recording each once, reviewing them."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import IntegrityError, transaction

from annotation.crowd.providers import CrowdProvider, RemoteAssignment, get_provider
from annotation.crowd.services.answers import record_answers, review_assignment
from annotation.crowd.services.hooks import platform_syncs, sync_steps
from annotation.crowd.services.locking import one_per_batch
from annotation.crowd.services.pseudonyms import worker_for
from annotation.crowd.services.statuses import complete_if_done, settle_hit_statuses
from annotation.models import Assignment, Batch, Hit
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
    #: What the platform's own sync found; ``None`` where it has none.
    platform: object | None = None
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
        # A concurrent sync stored it first, or a second assignment of the worker on this HIT.
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
    Safe to run any number of times: an assignment is stored and reviewed once."""
    if batch.status == Batch.Status.DRAFT:
        raise ServiceError(f"batch {batch.name!r} is not published yet")
    provider = provider or get_provider(batch.provider)
    platform_sync = platform_syncs.get(batch.provider)
    if platform_sync is not None:  # its answers are not read HIT by HIT
        return platform_sync(batch, provider, approve_all=approve_all, job=job, bar=bar)
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
    run_sync_steps(batch, provider, result)
    settle_hit_statuses(batch)
    result.completed = complete_if_done(batch)
    return result


def run_sync_steps(batch: Batch, provider: CrowdProvider, result: SyncResult) -> None:
    """After the review, the registered :data:`.hooks.sync_steps`; a platform's own sync calls it too."""
    sync_steps.run(batch, provider, result)

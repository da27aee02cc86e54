"""Publishing, syncing and escalating as background jobs, followed through a ``core.models.Job``.

Each job is declared once here (:func:`core.jobs.background_job`): its kind, its Celery
task's name and its work; ``start_*`` check the batch and start it. The Job is sent only
once the caller's transaction has committed (so the worker sees the batch and the job), and
runs in this process when no broker is configured (``core.local_jobs``). Publishing,
syncing and escalating record every provider call before making it, so a redelivery after
a crash finishes the work instead of repeating it.
"""

from __future__ import annotations

from dataclasses import asdict

from django.urls import reverse

from core.errors import StateError
from core.jobs import background_job
from core.models import Job

from ..models import Batch
from .escalation import escalate_batch
from .publishing import check_publishable, publish_batch
from .sync import sync_batch


def _require_status(batch: Batch, *allowed: str) -> None:
    """Refuse at once (a message on the page) rather than queue a job that can only fail."""
    if batch.status not in allowed:
        raise StateError(f"batch {batch.name!r} is {batch.status}")


def _batch_url(batch: Batch) -> str:
    return reverse("annotation:batch-detail", args=[batch.name])


@background_job("annotation.publish", task="annotation.tasks.publish_batch_task")
def publish_job(job: Job, batch_id: int) -> int:
    batch = Batch.objects.get(pk=batch_id)
    published = publish_batch(batch, job=job)
    job.result = {"batch": batch.name, "published": published, "url": _batch_url(batch)}
    job.message = f"Published {published} HIT(s)"
    return published


@background_job("annotation.sync", task="annotation.tasks.sync_batch_task")
def sync_job(job: Job, batch_id: int, approve_all: bool = False) -> dict:
    batch = Batch.objects.get(pk=batch_id)
    result = asdict(sync_batch(batch, approve_all=approve_all, job=job))
    job.result = {"batch": batch.name, **result, "url": _batch_url(batch)}
    job.message = f"{result['new']} new assignment(s), {result['approved']} approved, {result['rejected']} rejected"
    return result


@background_job("annotation.escalate", task="annotation.tasks.escalate_batch_task")
def escalate_job(
    job: Job, batch_id: int, max_assignments: int, confirmed_hits: list[int] | None = None, until: str = "majority"
) -> int:
    batch = Batch.objects.get(pk=batch_id)
    added = len(escalate_batch(batch, max_assignments, confirmed_hits=confirmed_hits, until=until))
    job.result = {"batch": batch.name, "extra_assignments": added, "url": _batch_url(batch)}
    job.message = f"Added {added} assignment(s)"
    return added


def start_publish(batch: Batch) -> Job:
    _require_status(batch, Batch.Status.DRAFT, Batch.Status.PUBLISHED)
    check_publishable(batch)
    return publish_job.start(f"Publish {batch.name}", batch.pk)


def start_sync(batch: Batch, *, approve_all: bool = False) -> Job:
    _require_status(batch, Batch.Status.PUBLISHED, Batch.Status.COMPLETED, Batch.Status.CANCELLED)
    return sync_job.start(f"Sync {batch.name}", batch.pk, approve_all)


def start_escalate(
    batch: Batch, *, max_assignments: int, confirmed_hits: list[int] | None = None, until: str = "majority"
) -> Job:
    _require_status(batch, Batch.Status.PUBLISHED, Batch.Status.COMPLETED)
    return escalate_job.start(f"Escalate {batch.name}", batch.pk, max_assignments, confirmed_hits, until)

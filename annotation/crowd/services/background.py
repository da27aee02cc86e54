"""Publishing, syncing and paying bonuses as background jobs, followed through a ``core.models.Job``.

Each job is declared once (:func:`core.jobs.background_job`); ``start_*`` check the batch and start it.
A redelivery after a crash finishes the work: every provider call is recorded before it is made.
"""

from __future__ import annotations

from dataclasses import asdict

from django.urls import reverse

from annotation.crowd.services.publishing import check_publishable, publish_batch
from annotation.crowd.services.sync import sync_batch
from annotation.models import Batch
from core.errors import StateError
from core.jobs import background_job
from core.models import Job
from core.services.once import start_once


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


def start_publish(batch: Batch) -> Job:
    _require_status(batch, Batch.Status.DRAFT, Batch.Status.PUBLISHED)
    check_publishable(batch)
    busy = f"batch {batch.name!r} is being published already"
    return start_once(publish_job, batch, f"Publish {batch.name}", batch.pk, busy=busy)


def start_sync(batch: Batch, *, approve_all: bool = False) -> Job:
    _require_status(batch, Batch.Status.PUBLISHED, Batch.Status.COMPLETED, Batch.Status.CANCELLED)
    busy = f"batch {batch.name!r} is being synced already"
    return start_once(sync_job, batch, f"Sync {batch.name}", batch.pk, approve_all, busy=busy)

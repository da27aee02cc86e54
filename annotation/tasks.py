"""Celery tasks of the annotation app: thin shells over services, run as Jobs (:mod:`core.tasks`).

Publishing, syncing and escalating record every provider call before making it, so a
redelivery after a crash finishes the work instead of repeating it.
"""

from __future__ import annotations

from dataclasses import asdict

from django.urls import reverse

from core.models import Job
from core.tasks import job_task

from . import services
from .models import Batch


def _batch_url(batch: Batch) -> str:
    return reverse("annotation:batch-detail", args=[batch.name])


@job_task
def publish_batch_task(job: Job, batch_id: int) -> int:
    batch = Batch.objects.get(pk=batch_id)
    published = services.publish_batch(batch, job=job)
    job.result = {"batch": batch.name, "published": published, "url": _batch_url(batch)}
    job.message = f"Published {published} HIT(s)"
    return published


@job_task
def sync_batch_task(job: Job, batch_id: int, approve_all: bool = False) -> dict:
    batch = Batch.objects.get(pk=batch_id)
    result = asdict(services.sync_batch(batch, approve_all=approve_all, job=job))
    job.result = {"batch": batch.name, **result, "url": _batch_url(batch)}
    job.message = f"{result['new']} new assignment(s), {result['approved']} approved, {result['rejected']} rejected"
    return result


@job_task
def escalate_batch_task(
    job: Job, batch_id: int, max_assignments: int, confirmed_hits: list[int] | None = None, until: str = "majority"
) -> int:
    batch = Batch.objects.get(pk=batch_id)
    added = len(services.escalate_batch(batch, max_assignments, confirmed_hits=confirmed_hits, until=until))
    job.result = {"batch": batch.name, "extra_assignments": added, "url": _batch_url(batch)}
    job.message = f"Added {added} assignment(s)"
    return added

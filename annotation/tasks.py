"""Celery tasks of the annotation app: thin shells over services, reporting through a Job."""

from __future__ import annotations

from dataclasses import asdict

from django.urls import reverse

from config.celery import app
from core.jobs import job_status
from core.models import Job

from . import services
from .models import Batch


def _batch_url(batch: Batch) -> str:
    return reverse("annotation:batch-detail", args=[batch.name])


@app.task
def publish_batch_task(job_id: int, batch_id: int) -> int:
    job = Job.objects.get(pk=job_id)
    with job_status(job):
        batch = Batch.objects.get(pk=batch_id)
        published = services.publish_batch(batch, job=job)
        job.result = {"batch": batch.name, "published": published, "url": _batch_url(batch)}
        job.message = f"Published {published} HIT(s)"
    return published


@app.task
def sync_batch_task(job_id: int, batch_id: int, approve_all: bool = False) -> dict:
    job = Job.objects.get(pk=job_id)
    with job_status(job):
        batch = Batch.objects.get(pk=batch_id)
        result = asdict(services.sync_batch(batch, approve_all=approve_all, job=job))
        job.result = {"batch": batch.name, **result, "url": _batch_url(batch)}
        job.message = f"{result['new']} new assignment(s), {result['approved']} approved, {result['rejected']} rejected"
    return result


@app.task
def escalate_batch_task(
    job_id: int, batch_id: int, max_assignments: int, confirmed_hits: list[int] | None = None, until: str = "majority"
) -> int:
    job = Job.objects.get(pk=job_id)
    with job_status(job):
        batch = Batch.objects.get(pk=batch_id)
        added = len(services.escalate_batch(batch, max_assignments, confirmed_hits=confirmed_hits, until=until))
        job.result = {"batch": batch.name, "extra_assignments": added, "url": _batch_url(batch)}
        job.message = f"Added {added} assignment(s)"
    return added

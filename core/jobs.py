"""Running long work as a Job: status, errors and results recorded for pages to poll."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .models import Job


def create_job(kind: str, description: str = "") -> Job:
    return Job.objects.create(kind=kind, description=description[:500])


@contextmanager
def job_status(job: Job) -> Iterator[Job]:
    """Mark ``job`` running, then done or failed (with the error's message) when the block ends."""
    job.status = Job.Status.RUNNING
    job.save(update_fields=["status", "updated"])
    try:
        yield job
    except Exception as exc:
        job.status = Job.Status.FAILED
        job.message = str(exc)[:5000]
        job.save(update_fields=["status", "message", "updated"])
        raise
    job.status = Job.Status.DONE
    job.save(update_fields=["status", "message", "result", "done", "updated"])

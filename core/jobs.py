"""Long work as a Job: a progress record for pages to poll.

Work run by Celery creates its Job with :func:`start_job`, which also records the task for
redelivery (:mod:`core.tasks` carries it out); :func:`create_job` is for a bare progress
record. This module imports no Celery: services that start jobs are loaded by every
command and page, and Celery costs ~0.1 s to import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import transaction

from .models import Job

if TYPE_CHECKING:
    from celery import Task


def create_job(kind: str, description: str = "") -> Job:
    return Job.objects.create(kind=kind, description=description[:500])


def start_job(task: Task, kind: str, description: str, *args: Any) -> Job:
    """Record a Job for ``task(job.pk, *args)`` and send the task once the caller's transaction commits.

    Without a broker the task runs in this process at the commit (:mod:`core.local_jobs`): on
    a background thread, or inline in a ``manage.py`` command.
    """
    job = Job.objects.create(kind=kind, description=description[:500], task=task.name, arguments=list(args))

    def send() -> None:
        from .tasks import send_job

        send_job(job, task)

    transaction.on_commit(send)
    return job

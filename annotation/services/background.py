"""Publishing, syncing and escalating as Celery tasks, followed through a ``pooling.models.Job``.

The task is queued with ``delay_on_commit``: it starts only once the caller's transaction
has committed (so the worker sees the batch and the job), and runs in-process when no
broker is configured (``CELERY_TASK_ALWAYS_EAGER``).
"""

from __future__ import annotations

from core.errors import StateError
from core.jobs import create_job
from core.models import Job

from ..models import Batch


def _require_status(batch: Batch, *allowed: str) -> None:
    """Refuse at once (a message on the page) rather than queue a job that can only fail."""
    if batch.status not in allowed:
        raise StateError(f"batch {batch.name!r} is {batch.status}")


def start_publish(batch: Batch) -> Job:
    from ..tasks import publish_batch_task

    _require_status(batch, Batch.Status.DRAFT, Batch.Status.PUBLISHED)
    job = create_job("annotation.publish", f"Publish {batch.name}")
    publish_batch_task.delay_on_commit(job.pk, batch.pk)
    return job


def start_sync(batch: Batch, *, approve_all: bool = False) -> Job:
    from ..tasks import sync_batch_task

    _require_status(batch, Batch.Status.PUBLISHED, Batch.Status.COMPLETED, Batch.Status.CANCELLED)
    job = create_job("annotation.sync", f"Sync {batch.name}")
    sync_batch_task.delay_on_commit(job.pk, batch.pk, approve_all)
    return job


def start_escalate(
    batch: Batch, *, max_assignments: int, confirmed_hits: list[int] | None = None, until: str = "majority"
) -> Job:
    from ..tasks import escalate_batch_task

    _require_status(batch, Batch.Status.PUBLISHED, Batch.Status.COMPLETED)
    job = create_job("annotation.escalate", f"Escalate {batch.name}")
    escalate_batch_task.delay_on_commit(job.pk, batch.pk, max_assignments, confirmed_hits, until)
    return job

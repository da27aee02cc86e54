"""Publishing, syncing and escalating as Celery tasks, followed through a ``core.models.Job``.

``core.jobs.start_job`` sends the task only once the caller's transaction has committed
(so the worker sees the batch and the job), and runs it in this process when no broker
is configured (``core.local_jobs``).
"""

from __future__ import annotations

from core.errors import StateError
from core.jobs import start_job
from core.models import Job

from ..models import Batch


def _require_status(batch: Batch, *allowed: str) -> None:
    """Refuse at once (a message on the page) rather than queue a job that can only fail."""
    if batch.status not in allowed:
        raise StateError(f"batch {batch.name!r} is {batch.status}")


def start_publish(batch: Batch) -> Job:
    from ..tasks import publish_batch_task

    _require_status(batch, Batch.Status.DRAFT, Batch.Status.PUBLISHED)
    return start_job(publish_batch_task, "annotation.publish", f"Publish {batch.name}", batch.pk)


def start_sync(batch: Batch, *, approve_all: bool = False) -> Job:
    from ..tasks import sync_batch_task

    _require_status(batch, Batch.Status.PUBLISHED, Batch.Status.COMPLETED, Batch.Status.CANCELLED)
    return start_job(sync_batch_task, "annotation.sync", f"Sync {batch.name}", batch.pk, approve_all)


def start_escalate(
    batch: Batch, *, max_assignments: int, confirmed_hits: list[int] | None = None, until: str = "majority"
) -> Job:
    from ..tasks import escalate_batch_task

    _require_status(batch, Batch.Status.PUBLISHED, Batch.Status.COMPLETED)
    return start_job(
        escalate_batch_task,
        "annotation.escalate",
        f"Escalate {batch.name}",
        batch.pk,
        max_assignments,
        confirmed_hits,
        until,
    )

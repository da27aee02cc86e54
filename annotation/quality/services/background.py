"""Escalating as a background job (``annotation.escalate``): a redelivery after a crash finishes the
work instead of repeating it. The kind and task name are stored in ``Job`` rows: they never change."""

from __future__ import annotations

from annotation.crowd.services.background import _batch_url, _require_status
from annotation.models import Batch
from annotation.quality.services.escalation import escalate_batch
from core.jobs import background_job
from core.models import Job
from core.services.once import start_once


@background_job("annotation.escalate", task="annotation.tasks.escalate_batch_task")
def escalate_job(
    job: Job, batch_id: int, max_assignments: int, confirmed_hits: list[int] | None = None, until: str = "majority"
) -> int:
    batch = Batch.objects.get(pk=batch_id)
    added = len(escalate_batch(batch, max_assignments, confirmed_hits=confirmed_hits, until=until))
    job.result = {"batch": batch.name, "extra_assignments": added, "url": _batch_url(batch)}
    job.message = f"Added {added} assignment(s)"
    return added


def start_escalate(
    batch: Batch, *, max_assignments: int, confirmed_hits: list[int] | None = None, until: str = "majority"
) -> Job:
    _require_status(batch, Batch.Status.PUBLISHED, Batch.Status.COMPLETED)
    busy = f"batch {batch.name!r} is being escalated already"
    args = (batch.pk, max_assignments, confirmed_hits, until)
    return start_once(escalate_job, batch, f"Escalate {batch.name}", *args, busy=busy)

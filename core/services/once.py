"""Paid actions exactly once: the one way an action that creates paid work refuses its duplicate.

Identical requests at the same moment (a double click, a retrying client) must not publish,
extend, route, escalate, re-offer or pay twice. Every such action is:

- **decided under the row lock** of what the work is for, in the caller's transaction, so the
  second of two requests waits for the first's commit and sees what it made;
- **keyed by the action and the arguments naming what it pays for**: the caller says what a live
  instance is (:func:`claim`'s ``live``), or :func:`start_once` finds a live Job of the same kind
  with the same leading arguments;
- **refused while the first is live** (``StateError``, a 409), naming the first; once it ended the
  action may run again, safe as every job behind it is idempotent on redelivery.

Nothing here knows a batch: the row and the test for "live" are the caller's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.db import models, transaction

from core.errors import StateError
from core.models import Job

if TYPE_CHECKING:
    from core.jobs import BackgroundJob

#: The states of a Job that is still live (a duplicate of it is refused).
LIVE_JOB = (Job.Status.PENDING, Job.Status.RUNNING)


def lock_row(row: models.Model) -> None:
    """Lock ``row`` until the caller's transaction ends (must be inside one: ``RuntimeError`` otherwise)."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("a paid action is decided inside a transaction (transaction.atomic)")
    list(type(row).objects.select_for_update().filter(pk=row.pk).values_list("pk"))


def claim(row: models.Model, live: Callable[[], str | None]) -> None:
    """Lock ``row`` and refuse the action (``StateError``) with the message ``live()`` returns, naming a
    live instance, if any; called under the lock, it sees what a concurrent request just committed."""
    lock_row(row)
    refusal = live()
    if refusal:
        raise StateError(refusal)


def live_job(kind: str, key: list[Any]) -> Job | None:
    """The oldest queued or running Job of ``kind`` whose first arguments are ``key``, in any group
    (paid work must start once even if the asking user does not see the group)."""
    jobs = Job._base_manager.filter(kind=kind, status__in=LIVE_JOB)
    for index, value in enumerate(key):
        jobs = jobs.filter(**{f"arguments__{index}": value})
    return jobs.order_by("pk").first()


def start_once(
    job: BackgroundJob, row: models.Model, description: str, *args: Any, key: int = 1, busy: str = ""
) -> Job:
    """Start ``job`` with ``args`` unless one of its kind with the same first ``key`` arguments is live,
    decided under ``row``'s lock; ``busy`` begins the refusal (default: "<description>: under way already")."""

    def live() -> str | None:
        found = live_job(job.kind, list(args[:key]))
        if found is None:
            return None
        return f"{busy or description + ': under way already'} (job {found.pk}, {found.status}); wait for it to end"

    with transaction.atomic():
        claim(row, live)
        return job.start(description, *args, of=row)

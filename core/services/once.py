"""Paid actions exactly once: the one way an action that creates paid work refuses its duplicate.

Six identical requests at the same moment (a double click, a retrying client, a hostile
script) must not publish, extend, route, escalate, re-offer or pay six times. Every such action
decides under one rule, here:

- **decided under the row lock**: the row the work is for (the batch) is locked with
  ``SELECT ... FOR UPDATE`` in the caller's transaction, so of two concurrent requests the
  second waits for the first's commit and then sees what the first made;
- **keyed by the action and the arguments that name what it pays for** (the batch; for a
  pre-labelling also the machine): the caller says what a live instance of the same action is
  (:func:`claim`'s ``live``), or, for a background job, :func:`start_once` finds it among the
  queued and running Jobs of the same kind with the same leading arguments;
- **a duplicate is refused while the first is live** (``StateError``: a 409 in the API, a
  message on the page, an error in a command) naming the first; once the first has ended (a
  Job done or failed, an extension completed or cancelled) the action may run again, which is
  safe because every job behind it is idempotent on redelivery (it finishes what was recorded
  instead of repeating it). The first's result is not returned for a repeat: a client that
  retries reads the 409's message (it names the live job or batch) and follows that one.

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
    """Lock ``row`` and refuse the action when ``live()`` finds a live instance of it (``StateError``).

    ``live`` is called under the lock: it reads what a concurrent request may just have committed.
    It returns the refusal's message, naming the live instance (e.g. "... (job 12, pending)"), or
    None when there is none.
    """
    lock_row(row)
    refusal = live()
    if refusal:
        raise StateError(refusal)


def live_job(kind: str, key: list[Any]) -> Job | None:
    """The oldest queued or running Job of ``kind`` whose first arguments are ``key``, whoever's group
    it was made in (unscoped: a Job started by a member of several groups may sit in another group
    than the asking user sees, and paid work must still start once)."""
    jobs = Job._base_manager.filter(kind=kind, status__in=LIVE_JOB)
    for index, value in enumerate(key):
        jobs = jobs.filter(**{f"arguments__{index}": value})
    return jobs.order_by("pk").first()


def start_once(
    job: BackgroundJob, row: models.Model, description: str, *args: Any, key: int = 1, busy: str = ""
) -> Job:
    """Start ``job`` with ``args`` unless one of its kind with the same first ``key`` arguments is live.

    Decided under ``row``'s lock (:func:`claim`); the Job is sent at the commit, as any. ``busy``
    begins the refusal (default: "<description>: under way already"); the live Job is named after it.
    """

    def live() -> str | None:
        found = live_job(job.kind, list(args[:key]))
        if found is None:
            return None
        return f"{busy or description + ': under way already'} (job {found.pk}, {found.status}); wait for it to end"

    with transaction.atomic():
        claim(row, live)
        return job.start(description, *args, of=row)

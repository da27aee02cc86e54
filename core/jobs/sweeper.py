"""The sweeper: send again the Jobs the database records as waiting but nobody will deliver.

Two kinds of Job are stuck:

- **pending** since its last message was sent more than ``JOB_SWEEP_AFTER_SECONDS`` ago (or never),
  and that message is neither queued nor reserved on the broker (never sent, or lost by the broker);
- **running** under a claimer silent for ``JOB_LEASE_SECONDS`` (its worker died) with no new message
  queued, or under a process of this host that no longer exists (known at once: such a Job is
  handed back, pending, before it is sent).

A running Job abandoned after ``JOB_MAX_ATTEMPTS`` claims is recorded failed instead (:func:`core.tasks.fail_exhausted`).
Without a broker, sending is running it here (:mod:`core.jobs.in_process`), within the same attempts.

Sending again is always safe (:mod:`core.tasks`); looking into the broker only saves needless
messages (Redis only: with another broker every old-enough pending Job is sent again). Run
``manage.py sweep_jobs`` every minute (docs/deployment.md); no request sweeps.
"""

from __future__ import annotations

import json
import logging
import socket
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from config.celery import app
from core.models import Job
from core.tasks import exhausted, fail_exhausted, process_gone, send_job

logger = logging.getLogger(__name__)


@dataclass
class Sweep:
    """What one sweep found and did (job ids)."""

    resent_pending: list[int] = field(default_factory=list)
    resent_running: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    held: list[int] = field(default_factory=list)
    unsent: list[int] = field(default_factory=list)

    @property
    def resent(self) -> list[int]:
        return self.resent_pending + self.resent_running


@dataclass
class BrokerMessages:
    """Ids of the task messages on the broker: waiting in a queue, or delivered and not yet acknowledged."""

    queued: set[str]
    reserved: set[str]


def broker_messages() -> BrokerMessages | None:
    """What the broker holds; ``None`` when it cannot be looked into (not Redis, or no broker)."""
    if app.conf.task_always_eager or not str(app.conf.broker_url or "").startswith(("redis://", "rediss://")):
        return None
    held = BrokerMessages(set(), set())
    queues = {app.conf.task_default_queue, *(q.name for q in (app.conf.task_queues or ()))}
    with app.connection_for_read() as conn:
        channel = conn.default_channel
        client = channel.client
        for queue in queues:
            for priority in channel.priority_steps:
                for raw in client.lrange(channel._q_for_pri(queue, priority), 0, -1):
                    held.queued.add(_message_id(json.loads(raw)))
        for raw in client.hvals(channel.unacked_key):
            held.reserved.add(_message_id(json.loads(raw)[0]))
    return held


def _send(job: Job) -> bool:
    """:func:`send_job`; without a broker the Job runs here, and its failure does not stop the sweep."""
    if not app.conf.task_always_eager:
        return send_job(job)
    try:
        send_job(job)
    except Exception:
        logger.exception("job %s failed", job.pk)
    return True


def _hand_back(job: Job) -> None:
    """Make a Job whose claimer process is gone pending again, unless it changed hands meanwhile."""
    Job.objects.filter(pk=job.pk, status=Job.Status.RUNNING, worker=job.worker, attempts=job.attempts).update(
        status=Job.Status.PENDING, worker="", updated=timezone.now()
    )


def _message_id(message: dict) -> str:
    return str((message.get("headers") or {}).get("id") or (message.get("properties") or {}).get("correlation_id", ""))


def sweep_jobs(*, now=None) -> Sweep:
    """Send again every stuck Job (see the module's docstring); returns what was found."""
    now = now or timezone.now()
    sweep = Sweep()
    waiting = list(
        Job.objects.filter(status=Job.Status.PENDING)
        .exclude(task="")
        .filter(Q(queued=None) | Q(queued__lt=now - timedelta(seconds=settings.JOB_SWEEP_AFTER_SECONDS)))
        .order_by("pk")
    )
    stale = now - timedelta(seconds=settings.JOB_LEASE_SECONDS)
    silent = Q(heartbeat__lt=stale) | Q(heartbeat=None, updated__lt=stale)
    running = (
        Job.objects.filter(status=Job.Status.RUNNING)
        .exclude(task="")
        .filter(silent | Q(worker__startswith=f"{socket.gethostname()}:"))
        .order_by("pk")
    )
    abandoned = []
    for job in running:
        gone = process_gone(job.worker)
        if not gone and (job.heartbeat or job.updated) >= stale:  # alive, on this host
            continue
        if exhausted(job):
            if fail_exhausted(job):
                sweep.failed.append(job.pk)
            continue
        if gone:
            _hand_back(job)
        abandoned.append(job)
    held = broker_messages() if waiting or abandoned else None
    for job in waiting:
        if held is not None and job.message_id in held.queued | held.reserved:
            sweep.held.append(job.pk)
            continue
        (sweep.resent_pending if _send(job) else sweep.unsent).append(job.pk)
    for job in abandoned:
        # Its message, if still reserved, belongs to the dead worker: only a queued one will come.
        if held is not None and job.message_id in held.queued:
            sweep.held.append(job.pk)
            continue
        (sweep.resent_running if _send(job) else sweep.unsent).append(job.pk)
    if sweep.resent:
        logger.warning("sweeper sent again: pending %s, abandoned %s", sweep.resent_pending, sweep.resent_running)
    if sweep.failed:
        logger.warning("sweeper failed after their last attempt: %s", sweep.failed)
    return sweep

"""Celery tasks that carry out a Job: delivered at least once, carried out once.

The broker may deliver a Job twice, even at once on two workers (``acks_late``,
``task_reject_on_worker_lost``, Redis's visibility timeout, the sweeper's resends:
:mod:`core.jobs.sweeper`). :func:`job_task` makes that harmless:

1. **Claim.** A delivery works only after one conditional ``UPDATE`` (compare and set on
   ``attempts``) hands it a Job that is pending or running under a claimer that is gone
   (heartbeat older than ``JOB_LEASE_SECONDS``, a dead process of this host, or this very
   process). A Job whose claimer died ``JOB_MAX_ATTEMPTS`` times is recorded failed instead
   (:func:`fail_exhausted`): a job that kills its worker would kill every next one.
2. **Done is done.** A delivery of a Job that is done or failed does nothing.
3. **Heartbeat.** A thread stamps ``Job.heartbeat`` every ``JOB_HEARTBEAT_SECONDS``.
4. **Work done but not recorded.** Each task is idempotent by construction
   (:mod:`annotation.crowd.services.publishing`) or, when ``job.redelivered``, looks for what
   an earlier delivery made.
5. **Nothing waiting is lost.** :func:`core.jobs.start_job` records task and arguments in the
   caller's transaction; a message never sent or lost is sent again by the sweeper.

A lost database connection hands the Job back (pending) and retries the task later. Without a
broker :func:`send_job` runs the Job in this process (:mod:`core.jobs.in_process`), so a process
delivers a given Job once at a time. Worker identity is ``host:pid``: run workers with the
prefork or solo pool (docs/deployment.md).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from celery import Task
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection, transaction
from django.db.models import F
from django.utils import timezone
from kombu.exceptions import OperationalError as BrokerError

# Tasks bind to the project's app (the settings' broker), never Celery's default app (amqp on localhost).
from config.celery import app
from core.db.scope import acting_in
from core.jobs import in_process as local_jobs
from core.jobs.registry import JobDeclaration, declared_jobs
from core.models import Job
from core.services.storage import process_alive

logger = logging.getLogger(__name__)

#: How often a task whose database connection broke is retried before its Job is failed.
DATABASE_RETRIES = 5

#: The Jobs a thread of this process is delivering now (see the module's docstring).
_delivering: set[int] = set()
_delivering_lock = threading.Lock()


def worker_identity() -> str:
    """``host:pid`` of this process: who a Job's ``worker`` field names."""
    return f"{socket.gethostname()}:{os.getpid()}"


def process_gone(worker: str) -> bool:
    """Whether ``worker`` (``host:pid``) names a process of this host that no longer exists."""
    host, _, pid = worker.rpartition(":")
    return host == socket.gethostname() and pid.isdigit() and not process_alive(int(pid))


def claimer_gone(job: Job, me: str, now=None) -> bool:
    """Whether the delivery that claimed a running ``job`` can no longer be working on it
    (``job.worker == me`` is a leftover: :func:`run_job` lets one delivery per process this far)."""
    now = now or timezone.now()
    if job.worker == me or job.heartbeat is None:
        return True
    if job.heartbeat < now - timedelta(seconds=settings.JOB_LEASE_SECONDS):
        return True
    return process_gone(job.worker)


def exhausted(job: Job, me: str | None = None) -> bool:
    """Whether ``job``, running under a claimer that is gone, has used its ``JOB_MAX_ATTEMPTS``
    (a Job ``me`` claimed itself, retried after a lost connection, lost no claimer to a death)."""
    return job.worker != me and job.attempts >= settings.JOB_MAX_ATTEMPTS


def exhausted_message(job: Job) -> str:
    """What a researcher reads on a Job failed after its last attempt (sweeper and late delivery alike)."""
    tried = f"attempts 1 to {job.attempts}" if job.attempts > 1 else "its only attempt"
    return (
        f"Stopped after {tried} (JOB_MAX_ATTEMPTS = {settings.JOB_MAX_ATTEMPTS}): each time, the process "
        f"carrying out this job (last {job.worker or 'unknown'}) died before it finished, without recording "
        "an error. A process that dies without a word was most likely killed by the system, often for using "
        "more memory than it may. It is not run again. Start it again on a smaller input (split the file or "
        "the collection), or ask whoever runs the site to give the workers more memory (docs/deployment.md)."
    )


def fail_exhausted(job: Job) -> bool:
    """Record FAILED a Job whose claimer died at its last attempt (see the module docstring), unless it
    changed hands meanwhile (compare and set, as a claim); whether it did."""
    with transaction.atomic():
        failed = Job.objects.filter(pk=job.pk, status=job.status, worker=job.worker, attempts=job.attempts).update(
            status=Job.Status.FAILED, message=exhausted_message(job)[:5000], updated=timezone.now()
        )
        if failed:
            job.refresh_from_db()
            if isinstance(job.result, dict) and job.result.pop("step", None) is not None:
                job.save(update_fields=["result"])
    if failed:
        logger.warning("job %s failed after %s attempts, its worker dead each time", job.pk, job.attempts)
    return bool(failed)


def _claim(job_id: int, me: str) -> Job | None:
    """The Job, now held by ``me``; ``None`` when finished, missing, held by a live claimer or exhausted."""
    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        logger.warning("job %s does not exist; its task does nothing", job_id)
        return None
    if job.status in (Job.Status.DONE, Job.Status.FAILED):
        logger.info("job %s is already %s; this delivery does nothing", job_id, job.status)
        return None
    if job.status == Job.Status.RUNNING and not claimer_gone(job, me):
        logger.info("job %s is running on %s; this delivery does nothing", job_id, job.worker)
        return None
    if job.status == Job.Status.RUNNING and exhausted(job, me):
        fail_exhausted(job)
        return None
    now = timezone.now()
    claimed = Job.objects.filter(pk=job_id, status=job.status, attempts=job.attempts).update(
        status=Job.Status.RUNNING, worker=me, heartbeat=now, attempts=F("attempts") + 1, updated=now
    )
    if not claimed:
        logger.info("job %s was claimed by another delivery at the same moment", job_id)
        return None
    job.refresh_from_db()
    return job


@contextmanager
def _heartbeat(job_id: int, me: str, beating: bool) -> Iterator[None]:
    """While the block runs, a thread stamps the Job's heartbeat (its own database connection)."""
    if not beating:
        yield
        return
    stopped = threading.Event()

    def beat() -> None:
        try:
            while not stopped.wait(settings.JOB_HEARTBEAT_SECONDS):
                try:
                    Job.objects.filter(pk=job_id, worker=me).update(heartbeat=timezone.now())
                except DatabaseError as exc:  # the database is restarting: stamp again next time
                    logger.warning("job %s: heartbeat not recorded (%s)", job_id, exc)
                    connection.close()
        finally:
            connection.close()

    thread = threading.Thread(target=beat, name=f"heartbeat-job-{job_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stopped.set()
        thread.join()


def _finish(job: Job, status: str, message: str | None = None) -> None:
    if isinstance(job.result, dict):
        job.result.pop("step", None)  # the last step of work that has ended (core.progress)
    job.status = status
    job.heartbeat = timezone.now()
    if message is not None:
        job.message = message[:5000]
    job.save(update_fields=["status", "message", "result", "done", "heartbeat", "updated"])


def _release(job_id: int, me: str) -> None:
    """Hand the Job back (pending) after a lost database connection, if the database answers."""
    connection.close()
    try:
        Job.objects.filter(pk=job_id, worker=me, status=Job.Status.RUNNING).update(status=Job.Status.PENDING, worker="")
    except DatabaseError as exc:  # still down: the claim lapses and the sweeper sends it again
        logger.warning("job %s: not handed back (%s)", job_id, exc)
        connection.close()


def run_job(
    task: Task, work: Callable[..., Any], job_id: int, args: tuple, failures: tuple[type[Exception], ...] = ()
) -> Any:
    """Claim the Job, do ``work(job, *args)`` with a heartbeat, record done or failed.

    An exception in ``failures`` fails the Job quietly (no retry could fix it, and eagerly the
    request that started it must not break); any other error fails the Job and is raised.
    """
    with _delivering_lock:
        if job_id in _delivering:
            logger.info("job %s is being delivered by this process already; this delivery does nothing", job_id)
            return None
        _delivering.add(job_id)
    try:
        return _run_claimed(task, work, job_id, args, failures)
    finally:
        with _delivering_lock:
            _delivering.discard(job_id)


def _run_claimed(
    task: Task, work: Callable[..., Any], job_id: int, args: tuple, failures: tuple[type[Exception], ...]
) -> Any:
    me = worker_identity()
    job = _claim(job_id, me)
    if job is None:
        return None
    # Eager on a background thread runs as long as on a worker, so it stamps a heartbeat too.
    eager = bool(task.request.is_eager)
    try:
        # What the work makes goes to the Job's group (its study's).
        with _heartbeat(job_id, me, not eager or local_jobs.in_background()), acting_in(job.group_id):
            result = work(job, *args)
    except (OperationalError, InterfaceError) as exc:
        if eager or task.request.retries >= DATABASE_RETRIES:
            _finish(job, Job.Status.FAILED, str(exc))
            raise
        logger.warning("job %s: database connection lost (%s); retrying", job_id, exc)
        _release(job_id, me)
        raise task.retry(exc=exc, countdown=settings.JOB_HEARTBEAT_SECONDS, max_retries=DATABASE_RETRIES) from exc
    except failures as exc:
        _finish(job, Job.Status.FAILED, str(exc))
        return None
    except Exception as exc:
        _finish(job, Job.Status.FAILED, str(exc))
        raise
    _finish(job, Job.Status.DONE)
    return result


def job_task(declared: JobDeclaration) -> Task:
    """The Celery task ``task(job_id, *args)`` of a declared background job; start it with
    :meth:`core.jobs.BackgroundJob.start`, never ``delay``: the Job must record the task."""

    def task(self: Task, job_id: int, *args: Any) -> Any:
        return run_job(self, declared.work, job_id, args, declared.failures)

    task.__doc__ = declared.work.__doc__
    return app.task(bind=True, name=declared.task)(task)


def task_for(kind: str) -> Task:
    """The Celery task of the background job ``kind``."""
    return app.tasks[declared_jobs()[kind].task]


def task_named(name: str) -> Task:
    """The configured app's task ``name``, loading the apps' tasks modules first when needed
    (services reach plain tasks by name: a service never imports a tasks module)."""
    if name not in app.tasks:
        app.loader.import_default_modules()  # the apps' tasks modules (autodiscovery)
    return app.tasks[name]


def send_job(job: Job, task: Task | None = None) -> bool:
    """Send the Job's task as a new message; ``False`` (logged) when the broker cannot be reached.

    The message id is recorded first, so the sweeper finds a message that never left. Without a
    broker the Job runs in this process: inline (raising what the task raises) or on a thread.
    """
    task = task or task_named(job.task)
    message_id = str(uuid.uuid4())
    Job.objects.filter(pk=job.pk).update(message_id=message_id, queued=timezone.now())
    arguments = (job.pk, *job.arguments)
    if task.app.conf.task_always_eager and not local_jobs.runs_inline():
        local_jobs.submit(job.pk, lambda: task.apply(arguments, task_id=message_id, throw=True), group=job.group_id)
        return True
    try:
        task.apply_async(arguments, task_id=message_id)
    except BrokerError as exc:
        logger.error("job %s: the broker is unreachable (%s); the sweeper will send it", job.pk, exc)
        return False
    return True


# One Celery task per declared job, whenever a worker or a sender loads this module.
for _declared in declared_jobs().values():
    job_task(_declared)

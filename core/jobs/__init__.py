"""Long work as a Job: a progress record for pages to poll, and the declaration of each background job.

A background job is written once, in its app's services, with :func:`background_job`::

    @background_job("annotation.publish", task="annotation.tasks.publish_batch_task")
    def publish_job(job: Job, batch_id: int) -> int:
        ...  # the work; fills job.result and job.message


    def start_publish(batch: Batch) -> Job:
        return publish_job.start(f"Publish {batch.name}", batch.pk)

The declaration holds the Job's ``kind`` (the value stored in ``Job.kind``: pages list Jobs
by it, so it never changes once rows exist), the name of its Celery task (stored in
``Job.task`` for redelivery: likewise fixed, and so a name, not the work's module path, which
changes when code moves; the historic names such as ``annotation.tasks.publish_batch_task`` name
no module), the work
itself and the errors that fail the Job quietly. :mod:`core.tasks` makes one Celery task of
each declaration (claim, heartbeat, done is done); services never import a tasks module.

:meth:`BackgroundJob.start` (:func:`start_job`) records the Job with its task and arguments
and sends the task after the commit. :func:`create_job` is for a bare progress record.
The declarations are kept in :mod:`core.jobs.registry`, which imports neither this module
nor :mod:`core.tasks` (both import it; this one imports ``core.tasks`` only when it sends).
This module imports no Celery: services that start jobs are loaded by every command and
page, and Celery is slow to import; it is loaded at the commit, when the task is sent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.db.models import Model

from core.db.scope import current_request
from core.errors import ServiceError
from core.jobs import registry as job_registry
from core.jobs.registry import JobDeclaration
from core.models import Job, ResearchGroup

if TYPE_CHECKING:
    from celery import Task


@dataclass(frozen=True)
class BackgroundJob(JobDeclaration):
    """One background job, as declared by :func:`background_job`: a :class:`~core.jobs.registry.JobDeclaration` that starts."""

    def start(self, description: str, *args: Any, of: Model | None = None) -> Job:
        """Record a Job for ``work(job, *args)`` and send its task once the caller's transaction commits.

        ``of``: the study object the work is on (a batch, a run, a report); the Job goes to its group."""
        return start_job(self.task, self.kind, description, *args, of=of)


def background_job(
    kind: str, *, task: str, failures: tuple[type[Exception], ...] = ()
) -> Callable[[Callable[..., Any]], BackgroundJob]:
    """Declare ``work(job, *args)`` as the background job ``kind`` (see the module's docstring).

    ``task``: the Celery task's name, required: Job rows record it, so it must stay the
    same when the work's module moves (a default derived from the module path would not). ``failures``: the errors that fail
    the Job without raising (bad input: no retry could fix it). ``work``'s arguments after
    the Job must be JSON values. Each kind and each task name is declared once
    (``ImproperlyConfigured`` otherwise).
    """

    def declare(work: Callable[..., Any]) -> BackgroundJob:
        if not task:
            raise ImproperlyConfigured(f"background job {kind!r} needs a task name (task=...)")
        declared = BackgroundJob(kind, task, work, tuple(failures))
        job_registry.declare(declared)
        return declared

    return declare


declared_jobs = job_registry.declared_jobs


def create_job(kind: str, description: str = "") -> Job:
    return Job.objects.create(kind=kind, description=description[:500])


def start_job(task: Task | str, kind: str, description: str, *args: Any, of: Model | None = None) -> Job:
    """Record a Job for ``task(job.pk, *args)`` and send the task once the caller's transaction commits.

    The Job belongs to the research group of ``of``, the study object it works on (a member of two
    groups syncing group A's batch while working in B: the Job, its description and what it makes
    are A's, as the batch is); without ``of``, to the group new objects go to
    (:func:`core.models.creation_group`). Its work runs acting in that group (:mod:`core.tasks`).

    ``task`` is a Celery task or its name (a declared job's :meth:`BackgroundJob.start`
    passes the name, so nothing loads Celery before the commit). Without a broker the task
    runs in this process at the commit (:mod:`core.jobs.in_process`): on a background thread,
    or inline in a ``manage.py`` command.
    """
    name = task if isinstance(task, str) else task.name
    group = None
    if of is not None:
        from core.selectors import group_of

        group = group_of(of)
    user = _requesting_user()
    with transaction.atomic():
        job = Job.objects.create(
            kind=kind, description=description[:500], task=name, arguments=list(args), group=group, started_by=user
        )
        if user is not None:
            admit(job)

    def send() -> None:
        from core.tasks import send_job

        send_job(job, None if isinstance(task, str) else task)

    transaction.on_commit(send)
    return job


class TooManyJobs(ServiceError):
    """A request would put its user or its group past the bound on jobs in flight (the API's 429)."""


def _requesting_user():
    """The signed-in user of the request being answered, if a request started this; else ``None``."""
    request = current_request.get()
    user = getattr(request, "user", None) if request is not None else None
    return user if user is not None and user.is_authenticated else None


def admit(job: Job) -> None:
    """Refuse ``job`` (just recorded, in the caller's transaction) if it puts who asked for it or its group
    past the bound on jobs in flight: ``JOB_MAX_IN_FLIGHT_PER_USER`` and ``JOB_MAX_IN_FLIGHT_PER_GROUP``.

    Why a refusal and not a longer queue: a page or API client that asked for work is told at once
    that it must wait, with the bound named, instead of a job that starts who knows when; what is
    below the bound waits in a queue that takes each group in turn (:mod:`core.jobs.in_process`),
    so a flood from one lab is at most its bound ahead of another lab's next job.

    The group's row is locked first, so two requests of one group at the same moment are counted one
    after the other (on PostgreSQL the second counts the first's job once it commits; SQLite writes
    one at a time anyway)."""
    if job.group_id is not None:
        ResearchGroup.objects.select_for_update().filter(pk=job.group_id).values_list("pk").first()
    in_flight = Job._base_manager.filter(status__in=(Job.Status.PENDING, Job.Status.RUNNING))
    mine = in_flight.filter(started_by_id=job.started_by_id).count()
    bound = settings.JOB_MAX_IN_FLIGHT_PER_USER
    if mine > bound:
        raise TooManyJobs(
            f"you have {bound} jobs waiting or running, the most one user may have "
            "(JOB_MAX_IN_FLIGHT_PER_USER): ask again when one of them has finished"
        )
    if job.group_id is not None:
        theirs = in_flight.filter(group_id=job.group_id).count()
        bound = settings.JOB_MAX_IN_FLIGHT_PER_GROUP
        if theirs > bound:
            raise TooManyJobs(
                f"your research group has {bound} jobs waiting or running, the most one group may have "
                "(JOB_MAX_IN_FLIGHT_PER_GROUP): ask again when one of them has finished"
            )

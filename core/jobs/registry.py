"""The declared background jobs: what each one is, and where they are kept.

:func:`core.jobs.background_job` declares (through :func:`declare`), :mod:`core.tasks` reads
(:func:`declared_jobs`) to make one Celery task of each. This module imports neither of
them, so the three make no import circle: ``core.jobs`` and ``core.tasks`` import this
module, and ``core.jobs`` imports ``core.tasks`` only inside the function that sends a Job.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured


@dataclass(frozen=True)
class JobDeclaration:
    """One background job: its kind, its Celery task's name, its work and its quiet failures.

    ``kind`` is stored in ``Job.kind`` and ``task`` in ``Job.task``: neither changes once
    rows exist. :class:`core.jobs.BackgroundJob` adds ``start``.
    """

    kind: str
    task: str
    work: Callable[..., Any]
    failures: tuple[type[Exception], ...] = ()


#: kind -> declaration, filled as the apps' ``services`` modules are imported.
DECLARED: dict[str, JobDeclaration] = {}


def declare(declared: JobDeclaration) -> None:
    """Keep ``declared``; a kind or task name another work already declared is refused.

    The same work declared again (its module reloaded) replaces its declaration.
    """
    work = declared.work
    for other in DECLARED.values():
        same_work = (other.work.__module__, other.work.__qualname__) == (work.__module__, work.__qualname__)
        if (other.kind == declared.kind or other.task == declared.task) and not same_work:
            raise ImproperlyConfigured(
                f"background job {declared.kind!r} (task {declared.task}) clashes with {other.kind!r} (task {other.task})"
            )
    DECLARED[declared.kind] = declared


def declared_jobs() -> dict[str, JobDeclaration]:
    """Every background job of the project by kind; declared in the apps' ``services``, which this loads."""
    from django.utils.module_loading import autodiscover_modules

    autodiscover_modules("services")
    return dict(DECLARED)

"""The declared background jobs: :func:`core.jobs.background_job` declares, :mod:`core.tasks` reads
to make one Celery task of each. This module imports neither, so the three make no import circle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured


@dataclass(frozen=True)
class JobDeclaration:
    """One background job: its kind and Celery task's name (stored in Job rows: fixed once rows exist),
    its work and its quiet failures."""

    kind: str
    task: str
    work: Callable[..., Any]
    failures: tuple[type[Exception], ...] = ()


#: kind -> declaration, filled as the apps' ``services`` modules are imported.
DECLARED: dict[str, JobDeclaration] = {}


def declare(declared: JobDeclaration) -> None:
    """Keep ``declared``; a kind or task name another work declared is refused (the same work, reloaded, replaces)."""
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

"""Where the declared background jobs are kept: :func:`core.jobs.background_job` adds, :mod:`core.tasks` reads.

A module of its own so that ``core.tasks`` (Celery) reads the declarations without
importing ``core.jobs``, which imports ``core.tasks`` when it sends a Job: no import circle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .jobs import BackgroundJob

#: kind -> declaration, filled as the apps' ``services`` modules are imported.
DECLARED: dict[str, BackgroundJob] = {}


def declared_jobs() -> dict[str, BackgroundJob]:
    """Every background job of the project by kind; declared in the apps' ``services``, which this loads."""
    from django.utils.module_loading import autodiscover_modules

    autodiscover_modules("services")
    return dict(DECLARED)

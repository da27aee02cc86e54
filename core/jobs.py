"""Long work as a Job: a progress record for pages to poll.

Work run by Celery creates its Job with :func:`core.tasks.start_job`, which also records the
task for redelivery; :func:`create_job` is for a bare progress record.
"""

from __future__ import annotations

from .models import Job


def create_job(kind: str, description: str = "") -> Job:
    return Job.objects.create(kind=kind, description=description[:500])

"""What the topic modules of :mod:`pooling.services` share.

An import's result (``ImportResult``), the progress of one pass over a file (bytes read,
to the Job and a tqdm bar), and the wait on the :class:`~pooling.models.ScanChunk` rows
of a split scan or run import: the project keeps no Celery result backend, so completion
is read from those rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core.errors import Skipped
from core.models import Job
from core.progress import Progress

from ..models import ScanChunk


@dataclass
class ImportResult:
    obj: object
    created: bool
    skipped: Skipped
    #: What the import did that the user should know (e.g. interleaved query blocks gathered).
    notes: list[str] = field(default_factory=list)


def byte_progress(path: Path, description: str, job: Job | None, bar: bool) -> Progress:
    """Progress of one pass over ``path``, in bytes."""
    return Progress(description, total=path.stat().st_size, unit="B", unit_scale=True, job=job, bar=bar)


def wait_for_chunks(key: str, timeout: float) -> None:
    """Wait until no chunk of ``key`` is pending, or ``timeout`` seconds; the caller reports
    the chunks left unfinished (a lost worker's chunk stays pending, to be read again)."""
    import time

    deadline = time.monotonic() + timeout
    while ScanChunk.objects.filter(key=key, status=ScanChunk.Status.PENDING).exists():
        if time.monotonic() > deadline:
            return  # the caller reports the unfinished chunks
        time.sleep(0.1)

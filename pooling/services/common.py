"""What the topic modules of :mod:`pooling.services` share: an import's result, the progress of one
pass over a file, and the chunks of a split scan or run import sent to workers (:func:`run_chunks`).
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from core.models import Job
from core.progress import Progress
from genderbias.errors import Skipped
from pooling.models import Collection, Qrels, QuerySet, Run, WordList

from ..models import ScanChunk


@dataclass
class ImportResult:
    obj: object
    created: bool
    skipped: Skipped
    #: What the import did that the user should know (e.g. interleaved query blocks gathered).
    notes: list[str] = field(default_factory=list)

    def counts(self) -> dict:
        """``lines_read`` (data lines; ``None`` when the content was already there), ``imported`` (rows
        made) and ``skipped`` (bad lines passed over). A collection by reference is not read:
        ``by_reference`` holds how many passages its metadata says it has (``None``: unknown)."""
        skipped = len(self.skipped)
        if not self.created:
            return {"lines_read": None, "imported": 0, "skipped": skipped}
        imported = _records(self.obj)
        counts = {"lines_read": imported + skipped, "imported": imported, "skipped": skipped}
        held = _by_reference(self.obj)
        if held is not None:
            counts["by_reference"] = held.passages
        return counts

    def outcome(self) -> str:
        """The counts in words, for a job's message: ``8 lines read, 6 imported, 2 skipped``, a collection
        by reference's passages first."""
        counts = self.counts()
        if counts["lines_read"] is None:
            return "nothing imported"
        read = f"{counts['lines_read']:,} lines read, {counts['imported']:,} imported, {counts['skipped']:,} skipped"
        if "by_reference" not in counts:
            return read
        known = counts["by_reference"]
        held = (
            "passages registered by reference: "
            + (f"{known:,} known from the collection's metadata" if known is not None else "their number unknown")
            + ", 0 read (each is read by id when a pool or a report asks for it)"
        )
        return held if counts["lines_read"] == 0 else f"{held}; {read}"


@dataclass(kw_only=True)
class ImportedParts:
    """What an import of several parts registered, each through the import of its kind (``None``: a part it
    lacks): :meth:`add` takes a part's result, counting in whether it made anything and the lines it skipped."""

    collection: object = None
    query_set: object = None
    qrels: object = None
    created: bool = False
    skipped: Skipped = field(default_factory=Skipped)

    def parts(self) -> list:
        return [part for part in (self.collection, self.query_set, self.qrels) if part is not None]

    def add(self, result: ImportResult) -> object:
        self.created = self.created or result.created
        self.skipped.errors.extend(result.skipped.errors)
        return result.obj


@dataclass
class DatasetImport(ImportedParts):
    """What an ir_datasets import registered (``None``: a part the dataset lacks or could not be tied)."""

    dataset_id: str
    version: str


def _records(obj) -> int:
    """Rows an import made (a dataset's or a named set's: its parts' together)."""
    if isinstance(obj, ImportedParts):
        return sum(_records(part) for part in obj.parts())
    if isinstance(obj, Collection):  # a collection by reference is not read: no row made (ImportResult.counts)
        return 0 if obj.by_reference else obj.passages or 0
    if isinstance(obj, QuerySet):
        return obj.queries.count()
    if isinstance(obj, Run):
        return obj.rows
    if isinstance(obj, WordList):
        return len(obj.words)
    if isinstance(obj, Qrels):
        return obj.judgments
    raise TypeError(f"not an import's result: {obj!r}")


def _by_reference(obj) -> Collection | None:
    """The collection by reference an import registered (alone, or as a dataset's documents), if any."""
    if isinstance(obj, DatasetImport):
        obj = obj.collection
    return obj if isinstance(obj, Collection) and obj.by_reference else None


def byte_progress(path: Path, description: str, job: Job | None, bar: bool) -> Progress:
    """Progress of one pass over ``path``, in bytes."""
    return Progress(description, total=path.stat().st_size, unit="B", unit_scale=True, job=job, bar=bar)


def run_chunks(key: str, task: str, *args, timeout: float) -> list[ScanChunk]:
    """Send ``task(chunk id, *args)`` for each pending chunk of ``key`` as one Celery group, wait until
    none is pending or ``timeout`` seconds passed, and return the chunks in order; the caller reports
    those unfinished (a lost worker's chunk stays pending, to be read again). Completion is read from
    the rows: the project keeps no Celery result backend."""
    from celery import group

    from core.tasks import task_named

    pending = list(ScanChunk.objects.filter(key=key, status=ScanChunk.Status.PENDING).values_list("pk", flat=True))
    if pending:
        chunk_task = task_named(task)
        group(chunk_task.s(pk, *args) for pk in pending).apply_async()
        deadline = time.monotonic() + timeout
        while ScanChunk.objects.filter(key=key, status=ScanChunk.Status.PENDING).exists():
            if time.monotonic() > deadline:
                break
            time.sleep(0.1)
    return list(ScanChunk.objects.filter(key=key).order_by("index"))


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cycle collector for a burst of allocation (a pool's rows), then let it run as before:
    each full collection walks every object the process holds, for no cycle worth collecting
    (docs/benchmarks.md, "Where `pool`'s CPU goes"). Nested use leaves a paused collector paused.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()

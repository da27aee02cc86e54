"""What the topic modules of :mod:`pooling.services` share.

An import's result (``ImportResult``), the progress of one pass over a file (bytes read,
to the Job and a tqdm bar), and the wait on the :class:`~pooling.models.ScanChunk` rows
of a split scan or run import: the project keeps no Celery result backend, so completion
is read from those rows.
"""

from __future__ import annotations

import contextlib
import gc
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
        """``lines_read`` (the data lines: not blank, not comments), ``imported`` (rows made:
        passages, queries, run lines, words, judgments) and ``skipped`` (bad lines passed over). An
        import that found its content already there imports nothing; ``lines_read`` is then
        ``None`` (a run already there is not read again).

        A collection registered by reference is not read: its passages are neither lines read nor
        rows imported, and ``by_reference`` holds how many its metadata says it has (``None``: it does
        not say), so that registering MS MARCO v2's 138M passages does not report them read."""
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
        """The counts in words, for a job's message: ``8 lines read, 6 imported, 2 skipped``; a collection
        by reference first, as what it is: ``passages registered by reference: 138,364,198 known from the
        collection's metadata, 0 read``."""
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


@dataclass
class DatasetImport:
    """What an ir_datasets import registered (``None``: a part the dataset lacks or could not be tied)."""

    dataset_id: str
    version: str
    collection: object = None
    query_set: object = None
    qrels: object = None

    def parts(self) -> list:
        return [part for part in (self.collection, self.query_set, self.qrels) if part is not None]


def _records(obj) -> int:
    """Rows an import made: a collection's passages, a query set's queries, a run's lines, a
    word list's words, a dataset's passages, queries and judgments together."""

    if isinstance(obj, DatasetImport) or hasattr(obj, "named"):  # a dataset's or a named set's parts
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


def wait_for_chunks(key: str, timeout: float) -> None:
    """Wait until no chunk of ``key`` is pending, or ``timeout`` seconds; the caller reports
    the chunks left unfinished (a lost worker's chunk stays pending, to be read again)."""
    import time

    deadline = time.monotonic() + timeout
    while ScanChunk.objects.filter(key=key, status=ScanChunk.Status.PENDING).exists():
        if time.monotonic() > deadline:
            return  # the caller reports the unfinished chunks
        time.sleep(0.1)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cycle collector for a burst of allocation (a pool's tens of thousands
    of provenance tuples and rows), then let it run as before.

    Each full collection walks every object the process holds (Django, polars, numpy: about
    60 ms of a pool at 1M passages, for nothing: the work makes no reference cycles worth
    collecting before it ends). Nested use leaves a paused collector paused.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()

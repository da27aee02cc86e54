"""Registering runs: a run file read, checked against its collection and normalised once
into Parquet (``qid, docid, rank, score``), whole or split over Celery workers.

The normalised file is named by content (file hash, order, collection) and written before the
row is created, so a retry reuses it. A split import (``chunks``) gives exactly the run a whole
read gives: the workers only parse and check lines, and this process finishes the run in one piece.
"""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from django.db import transaction

from core.errors import ServiceError
from core.services.names import validate_name
from core.services.storage import cache_dir
from genderbias.errors import InputError, Skipped
from genderbias.files.atomic import file_sha256, write_parquet_atomic

from ..models import Collection, Run, ScanChunk
from ..preview import LineProblems
from ..selectors import collection_docids, known_docids_of
from .common import ImportResult, run_chunks

if TYPE_CHECKING:
    from genderbias.files.known_docids import KnownDocids
    from genderbias.files.runs import RunTable


def known_docids(collection: Collection) -> KnownDocids:
    """The collection's docids prepared for checking runs, read at the first run checked; pass it
    to several ``import_run(..., known=...)`` of the collection.

    The sorted index is kept beside the docid index for the next process, tied to that index's
    current state (content hash, size, time): one made from anything else is rebuilt, not trusted.
    """
    from genderbias.files.known_docids import KnownDocids

    if collection.by_reference:  # checked by the id scheme, or not at all (:func:`known_docids_of`)
        return known_docids_of(collection)
    try:
        stat = Path(collection.docid_index).stat()
    except OSError:
        return KnownDocids(lambda: collection_docids(collection))
    return KnownDocids(
        lambda: collection_docids(collection),
        saved=known_index_path(collection),
        source=(
            f"collection sha256 {collection.sha256}, {collection.passages} passages; "
            f"docid index {stat.st_size} bytes, modified {stat.st_mtime_ns}"
        ),
        rows=collection.passages,
    )


def known_index_path(collection: Collection) -> Path:
    """Where :func:`known_docids` keeps the collection's sorted docid index between processes."""
    return Path(collection.docid_index).with_suffix(".known.parquet")


def import_run(
    path: str | Path,
    name: str,
    collection: Collection,
    *,
    order: str = Run.Order.SCORE,
    skip_bad_lines: bool = False,
    run_format: str = "auto",
    chunks: int | None = None,
    timeout: float = 3600.0,
    known: KnownDocids | None = None,
) -> ImportResult:
    """Register a run over ``collection``, normalised into a Parquet file.

    ``run_format``: ``trec`` (6 columns), ``msmarco`` (``qid docid rank``) or ``auto`` (from the first
    line). ``chunks`` (≥ 1) splits reading and checking over Celery workers (:func:`read_run_chunked`).
    ``known``: :func:`known_docids` of ``collection``, shared by several runs.
    """
    from genderbias.files.runs import read_run, scan_run_bytes

    validate_name(name, "run")
    path = Path(path).resolve()
    existing = Run.objects.filter(name=name).first()
    if existing is not None:
        sha = file_sha256(path)
        if existing.sha256 == sha and existing.order == order and existing.collection_id == collection.pk:
            return ImportResult(existing, False, Skipped())
        raise ServiceError(f"a run named {name!r} already exists with different content, order or collection")
    if chunks:
        sha = file_sha256(path)
        skipped = Skipped() if skip_bad_lines else None
        table = read_run_chunked(
            path, sha, collection, order=order, skipped=skipped, run_format=run_format, chunks=chunks, timeout=timeout
        )
    else:
        skipped = LineProblems(path=path, skip=skip_bad_lines)  # every bad line listed, refused unless skipped
        # The pass over the file's bytes (its hash) on a thread while polars parses it: both let go of
        # the GIL (docs/benchmarks.md, "The study at its full size").
        with skipped.reading(), ThreadPoolExecutor(1) as scanning:
            scanned = scanning.submit(scan_run_bytes, path)
            if known is None:
                known = known_docids(collection)
            table = read_run(
                path, order=order, known_docids=known, skipped=skipped, run_format=run_format, scanned=scanned.result
            )
            sha = scanned.result().sha256
    notes = [f"format: {'MS MARCO (qid docid rank; ordered by rank)' if table.format == 'msmarco' else 'TREC'}"]
    if table.interleaved_queries:
        notes.append(
            f"{table.interleaved_queries:,} queries had their lines in several blocks; "
            "they were gathered at each query's first appearance, as trec_eval does"
        )
    if table.reordered_ties:
        notes.append(tie_note(table.reordered_ties, order))
    data_path = cache_dir("runs") / f"{sha}-{order}-{collection.sha256[:16]}.parquet"
    write_parquet_atomic(table.frame, data_path, compression="lz4")
    with transaction.atomic():
        run = Run.objects.create(
            name=name,
            collection=collection,
            path=str(path),
            sha256=sha,
            order=order,
            queries=table.queries,
            rows=len(table.frame),
            reordered_ties=table.reordered_ties,
            score_ordered=table.in_score_order,
            data=str(data_path),
        )
    return ImportResult(run, True, skipped or Skipped(), notes)


def tie_note(reordered: int, order: str) -> str:
    """What an import says of a run whose file orders tied scores otherwise than trec_eval's rule: the order
    it stored, which reports and pools ignore unless asked (:data:`core.options.TIES_OPTION`)."""
    how = (
        "stored ranked by docid descending (trec_eval's rule)"
        if order == Run.Order.SCORE
        else "stored in the file's order (--order file)"
    )
    return (
        f"tied scores: {reordered:,} quer{'y' if reordered == 1 else 'ies'} had ties that the file ordered "
        f"differently; {how}. Reports and pools ignore that order by default: they average every figure over "
        "all orders of tied documents (ties: tie-aware); only their 'file' order of ties reads the stored order"
    )


def read_run_chunked(
    path: Path,
    sha: str,
    collection: Collection,
    *,
    order: str,
    skipped: Skipped | None,
    run_format: str = "auto",
    chunks: int = 2,
    timeout: float = 3600.0,
) -> RunTable:
    """:func:`genderbias.files.runs.read_run`, its line parsing and checking split over Celery workers.

    The file (content ``sha``) is cut into ``chunks`` byte ranges at line starts (a gzipped file is one
    chunk), each a :class:`ScanChunk` row with its first line's number, so errors name the true line.
    Each ``parse_run_chunk_task`` writes its valid and skipped lines; this process gathers them in file
    order and finishes the run as a whole read does. A lost worker's chunk stays pending, to be read by
    the next call; bad input fails with the file's first ``file:line: problem``. Once read or refused,
    the chunks' rows and files are removed.
    """
    import polars as pl

    from genderbias.files import blocks, runs

    path, run_format = runs.check_run_file(path, order, run_format)
    ranges = blocks.byte_ranges(path, chunks)
    mode = "skip" if skipped is not None else "strict"
    key = f"run-{sha[:24]}-{collection.sha256[:16]}-{run_format}-{mode}-{len(ranges)}"
    if not ScanChunk.objects.filter(key=key).exists():
        first_lines = blocks.line_numbers_at(path, [start for start, _ in ranges])
        with transaction.atomic():
            for index, ((start, end), first_line) in enumerate(zip(ranges, first_lines, strict=True)):
                ScanChunk.objects.get_or_create(
                    key=key, index=index, defaults={"start": start, "end": end, "first_line": first_line}
                )
    args = (collection.pk, str(path), run_format, skipped is not None)
    done = run_chunks(key, "pooling.tasks.parse_run_chunk_task", *args, timeout=timeout)
    failed = [chunk for chunk in done if chunk.status == ScanChunk.Status.FAILED]
    unfinished = [chunk.index for chunk in done if chunk.status == ScanChunk.Status.PENDING]
    if unfinished and not failed:  # kept: the next call reads only these
        raise ServiceError(f"chunks {unfinished} of the run import are not done; import again to read them")
    try:
        if failed:
            error = json.loads(failed[0].error)
            raise InputError(path, error["line"], error["problem"])
        for chunk in done:
            for line, problem in (
                pl.read_parquet(_skipped_path(chunk.result)).iter_rows() if skipped is not None else ()
            ):
                skipped.add(InputError(path, line, problem))
        fields = pl.concat([pl.read_parquet(chunk.result) for chunk in done])
        return runs.finish_run(path, fields, order, skipped, run_format)
    finally:  # read or refused: the chunks' rows and files are of no further use
        ScanChunk.objects.filter(key=key).delete()
        shutil.rmtree(cache_dir("scans", key), ignore_errors=True)


def _skipped_path(result: str | Path) -> Path:
    """Where a run chunk's skipped lines (``line, problem``) are kept, beside its result."""
    return Path(result).with_suffix(".skipped.parquet")


def parse_run_chunk(chunk_id: int, collection_id: int, path: str, run_format: str, skip_bad_lines: bool) -> None:
    """Read and check one chunk of a split run import (``parse_run_chunk_task``); a done or failed chunk
    is left alone, and the files are written before the chunk is marked done."""
    import polars as pl

    from genderbias.files.runs import parse_run_lines

    chunk = ScanChunk.objects.filter(pk=chunk_id).first()
    if chunk is None or chunk.status == ScanChunk.Status.FAILED:  # gone: read and removed already
        return
    if chunk.status == ScanChunk.Status.DONE and Path(chunk.result).exists():
        return
    collection = Collection.objects.get(pk=collection_id)
    skipped = Skipped() if skip_bad_lines else None
    try:
        fields = parse_run_lines(
            Path(path), run_format, known_docids(collection), skipped, (chunk.start, chunk.end), chunk.first_line
        )
    except InputError as error:
        problem = json.dumps({"line": error.line, "problem": error.problem})
        ScanChunk.objects.filter(pk=chunk_id).update(status=ScanChunk.Status.FAILED, error=problem)
        return
    result = cache_dir("scans", chunk.key) / f"chunk-{chunk.index}.parquet"
    bad = skipped.errors if skipped is not None else []
    lines = pl.DataFrame(
        {"line": [e.line for e in bad], "problem": [e.problem for e in bad]},
        schema={"line": pl.Int64, "problem": pl.String},
    )
    write_parquet_atomic(lines, _skipped_path(result))
    write_parquet_atomic(fields, result)
    if not ScanChunk.objects.filter(pk=chunk_id).update(status=ScanChunk.Status.DONE, result=str(result)):
        # A second delivery finishing after the import was read and its chunks removed.
        result.unlink(missing_ok=True)
        _skipped_path(result).unlink(missing_ok=True)

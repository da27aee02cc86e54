"""Services of the pooling app: everything that changes its state.

Heavy reading happens before any transaction opens; the database writes of one import
or pool happen in one transaction, so bad input or an interruption leaves nothing
half-written. Derived files (docid indexes, normalised runs, count caches) are written
atomically under ``settings.CACHE_DIR`` and named by content hash, so a retry or a second
import of the same file reuses them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from django.db import transaction

from core.db import insert_rows
from core.errors import InputError, ServiceError, Skipped
from core.files import file_sha256, write_parquet_atomic
from core.jobs import start_job
from core.models import Job
from core.names import validate_name
from core.progress import Progress
from core.storage import cache_dir, staging_path

from .analysis import check_at_least_one, check_magnitude, check_same_collection, check_tokenizer
from .models import Collection, Pool, PoolEntry, Query, QuerySet, Run, ScanChunk, WordList
from .queryfiles import write_queries
from .tokenize import DEFAULT_TOKENIZER, TOKENIZERS
from .wordlists import GenderWords, default_wordlist, load_wordlist, wordlist_from_mapping

if TYPE_CHECKING:
    import polars as pl

    from .readers import RunTable


def _byte_progress(path: Path, description: str, job: Job | None, bar: bool) -> Progress:
    return Progress(description, total=path.stat().st_size, unit="B", unit_scale=True, job=job, bar=bar)


# --- imports -------------------------------------------------------------------------------


@dataclass
class ImportResult:
    obj: object
    created: bool
    skipped: Skipped
    #: What the import did that the user should know (e.g. interleaved query blocks gathered).
    notes: list[str] = field(default_factory=list)


def import_collection(
    path: str | Path, name: str, *, skip_bad_lines: bool = False, job: Job | None = None, bar: bool = True
) -> ImportResult:
    """Register a passage collection (the text stays in its file).

    Importing the same file under the same name again changes nothing; the same name
    for different content is refused, and leaves no docid index behind. The index is
    written to a staging file and moved into place only once the import is accepted.
    """
    from .readers import scan_collection

    validate_name(name, "collection")
    path = Path(path).resolve()
    if not path.is_file():
        raise InputError(path, None, "no such file")
    skipped = Skipped() if skip_bad_lines else None
    staging = staging_path(f"collection-{path.name}.parquet")
    try:
        with _byte_progress(path, f"Scanning {path.name}", job, bar) as progress:
            scan = scan_collection(path, index_path=staging, progress=progress.update_to, skipped=skipped)
        existing = Collection.objects.filter(name=name).first()
        if existing is not None and existing.sha256 != scan.sha256:
            raise ServiceError(f"a collection named {name!r} already exists with different content ({existing.path})")
        index_path = cache_dir("collections") / f"{scan.sha256}.parquet"
        os.replace(staging, index_path)
    finally:
        staging.unlink(missing_ok=True)
    if existing is not None:
        return ImportResult(existing, False, skipped or Skipped())
    with transaction.atomic():
        collection = Collection.objects.create(
            name=name,
            path=str(path),
            size=scan.size,
            sha256=scan.sha256,
            passages=scan.passages,
            docid_index=str(index_path),
        )
    return ImportResult(collection, True, skipped or Skipped())


def docid_index(collection: Collection) -> Path:
    """The collection's docid index (``docid``, and for plain files ``start, length``), rebuilt
    if the cache was cleared."""
    from .readers import scan_collection

    index_path = Path(collection.docid_index)
    if not index_path.exists():
        index_path.parent.mkdir(parents=True, exist_ok=True)
        scan = scan_collection(collection.path, index_path=index_path)
        if scan.sha256 != collection.sha256:
            index_path.unlink()
            raise ServiceError(f"collection {collection.name!r}: {collection.path} changed since it was imported")
    return index_path


def collection_docids(collection: Collection) -> pl.Series:
    """Every docid of the collection, from its index."""
    import polars as pl

    return pl.read_parquet(docid_index(collection), columns=["docid"])["docid"].cast(pl.String)


def passage_spans(collection: Collection, docids: pl.Series) -> pl.DataFrame | None:
    """``docid, start, length`` of those ``docids`` in the collection's file; ``None`` when its
    index has no spans (a gzipped file, or an index written before spans were kept)."""
    import polars as pl

    index_path = docid_index(collection)
    if "start" not in pl.read_parquet_schema(index_path):
        return None
    wanted = docids.cast(pl.String).to_frame("docid").lazy()
    index = pl.scan_parquet(index_path).with_columns(pl.col("docid").cast(pl.String))
    return index.join(wanted, on="docid", how="semi").collect()


def import_queries(path: str | Path, name: str, *, skip_bad_lines: bool = False) -> ImportResult:
    """Register a query set from a ``qid<TAB>query`` file (idempotent, all or nothing)."""
    from .queryfiles import read_queries

    validate_name(name, "query set")
    path = Path(path).resolve()
    skipped = Skipped() if skip_bad_lines else None
    queries = read_queries(path, skipped=skipped)
    sha = file_sha256(path)
    existing = QuerySet.objects.filter(name=name).first()
    if existing is not None:
        if existing.sha256 == sha:
            return ImportResult(existing, False, skipped or Skipped())
        raise ServiceError(f"a query set named {name!r} already exists with different content")
    with transaction.atomic():
        query_set = create_query_set(name, queries, origin=QuerySet.Origin.IMPORTED, source=str(path), sha256=sha)
    return ImportResult(query_set, True, skipped or Skipped())


def create_query_set(
    name: str,
    queries: Iterable[tuple[str, str]],
    *,
    origin: str,
    source: str = "",
    sha256: str = "",
    description: str = "",
) -> QuerySet:
    """Create a query set with its queries (callers hold the transaction)."""
    validate_name(name, "query set")
    if QuerySet.objects.filter(name=name).exists():
        raise ServiceError(f"a query set named {name!r} already exists")
    query_set = QuerySet.objects.create(name=name, origin=origin, source=source, sha256=sha256, description=description)
    insert_rows(
        Query,
        ["query_set_id", "qid", "text", "position"],
        ((query_set.pk, qid, text, i) for i, (qid, text) in enumerate(queries)),
    )
    return query_set


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
) -> ImportResult:
    """Register a run over ``collection``, normalised into a Parquet file.

    ``run_format`` is ``trec`` (6 columns), ``msmarco`` (``qid docid rank``) or ``auto``
    (detected from the first line); the normalised file is the same either way.
    ``chunks`` (≥ 1) hands reading and checking the lines to Celery workers, split into
    that many byte ranges (:func:`read_run_chunked`); the run registered is the same.
    """
    from .readers import read_run

    validate_name(name, "run")
    path = Path(path).resolve()
    sha = file_sha256(path)
    existing = Run.objects.filter(name=name).first()
    if existing is not None:
        if existing.sha256 == sha and existing.order == order and existing.collection_id == collection.pk:
            return ImportResult(existing, False, Skipped())
        raise ServiceError(f"a run named {name!r} already exists with different content, order or collection")
    skipped = Skipped() if skip_bad_lines else None
    if chunks:
        table = read_run_chunked(
            path, sha, collection, order=order, skipped=skipped, run_format=run_format, chunks=chunks, timeout=timeout
        )
    else:
        table = read_run(
            path, order=order, known_docids=collection_docids(collection), skipped=skipped, run_format=run_format
        )
    notes = [f"format: {'MS MARCO (qid docid rank; ordered by rank)' if table.format == 'msmarco' else 'TREC'}"]
    if table.interleaved_queries:
        notes.append(
            f"{table.interleaved_queries:,} queries had their lines in several blocks; "
            "they were gathered at each query's first appearance, as trec_eval does"
        )
    data_path = cache_dir("runs") / f"{sha}-{order}-{collection.sha256[:16]}.parquet"
    write_parquet_atomic(table.frame, data_path)
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
            data=str(data_path),
        )
    return ImportResult(run, True, skipped or Skipped(), notes)


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
    """:func:`pooling.readers.read_run`, its line parsing and checking split over Celery workers.

    The file (content ``sha``) is cut into ``chunks`` byte ranges at line starts (a
    gzipped file is one chunk), each a :class:`ScanChunk` row that records the file's
    number of its first line, so errors name the true line. A ``parse_run_chunk_task``
    per pending chunk writes the chunk's valid lines (and the bad lines it skipped) to
    Parquet, then marks it done; this process waits on the rows, then gathers the chunks
    in file order and finishes the run in one piece (repeated pairs, query blocks, ties),
    exactly as reading it whole. A chunk whose worker was lost stays pending: calling
    again reads only what is not done, never a chunk twice. A chunk with bad input fails
    the import with its ``file:line: problem``, the first in the file. Once the chunks are
    read (or refused) their rows and files are removed.
    """
    import polars as pl
    from celery import group

    from .readers import byte_ranges, check_run_file, finish_run, line_numbers_at
    from .tasks import parse_run_chunk_task

    path, run_format = check_run_file(path, order, run_format)
    ranges = byte_ranges(path, chunks)
    mode = "skip" if skipped is not None else "strict"
    key = f"run-{sha[:24]}-{collection.sha256[:16]}-{run_format}-{mode}-{len(ranges)}"
    if not ScanChunk.objects.filter(key=key).exists():
        first_lines = line_numbers_at(path, [start for start, _ in ranges])
        with transaction.atomic():
            for index, ((start, end), first_line) in enumerate(zip(ranges, first_lines, strict=True)):
                ScanChunk.objects.get_or_create(
                    key=key, index=index, defaults={"start": start, "end": end, "first_line": first_line}
                )
    pending = list(ScanChunk.objects.filter(key=key, status=ScanChunk.Status.PENDING).values_list("pk", flat=True))
    if pending:
        tasks = (
            parse_run_chunk_task.s(pk, collection.pk, str(path), run_format, skipped is not None) for pk in pending
        )
        group(tasks).apply_async()
        _wait_for_chunks(key, timeout)
    done = list(ScanChunk.objects.filter(key=key).order_by("index"))
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
        return finish_run(path, fields, order, skipped, run_format)
    finally:  # read or refused: the chunks' rows and files are of no further use
        ScanChunk.objects.filter(key=key).delete()
        shutil.rmtree(cache_dir("scans", key), ignore_errors=True)


def _skipped_path(result: str | Path) -> Path:
    """Where a run chunk's skipped lines (``line, problem``) are kept, beside its result."""
    return Path(result).with_suffix(".skipped.parquet")


def parse_run_chunk(chunk_id: int, collection_id: int, path: str, run_format: str, skip_bad_lines: bool) -> None:
    """Read and check one chunk of a split run import (the body of ``parse_run_chunk_task``).

    Idempotent: a done or failed chunk is left alone; the result files are written
    atomically before the chunk is marked done, so a worker lost in between leaves it
    pending (to be read again) rather than done without its files.
    """
    import polars as pl

    from .readers import parse_run_lines

    chunk = ScanChunk.objects.filter(pk=chunk_id).first()
    if chunk is None or chunk.status == ScanChunk.Status.FAILED:  # gone: read and removed already
        return
    if chunk.status == ScanChunk.Status.DONE and Path(chunk.result).exists():
        return
    collection = Collection.objects.get(pk=collection_id)
    skipped = Skipped() if skip_bad_lines else None
    try:
        fields = parse_run_lines(
            Path(path), run_format, collection_docids(collection), skipped, (chunk.start, chunk.end), chunk.first_line
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


def run_frame(run: Run) -> pl.DataFrame:
    """The normalised run (``qid, docid, rank, score``).

    If the cached file is gone it is rebuilt from the run file, exactly as imported: the
    file must still have the imported content, lines are checked against the collection
    and bad ones skipped as ``--skip-bad-lines`` did, and the row count must match.
    """
    import polars as pl

    from .readers import read_run

    data = Path(run.data)
    if data.exists():
        return pl.read_parquet(data)
    if not Path(run.path).is_file() or file_sha256(run.path) != run.sha256:
        raise ServiceError(
            f"run {run.name!r}: its cache is gone and {run.path} is missing or changed since it was imported"
        )
    table = read_run(run.path, order=run.order, known_docids=collection_docids(run.collection), skipped=Skipped())
    if len(table.frame) != run.rows:
        raise ServiceError(f"run {run.name!r}: rebuilding its cache gave {len(table.frame)} rows, not {run.rows}")
    data.parent.mkdir(parents=True, exist_ok=True)
    write_parquet_atomic(table.frame, data)
    return table.frame


def top_rankings(runs: Sequence[Run], qids, depth: int, source: str) -> dict:
    """Each run's rankings down to ``depth`` for the ``qids`` (a polars Series), by run name.

    The check pools and reports share: a run that holds none of the queries is an error
    naming the run and ``source`` (the query set), never an empty column of results.
    """
    import polars as pl

    frames = {}
    for run in runs:
        frame = run_frame(run).filter(pl.col("rank") <= depth).join(qids.to_frame(), on="qid", how="semi")
        if not len(frame):
            raise ServiceError(f"run {run.name!r} contains none of the queries of {source}")
        frames[run.name] = frame
    return frames


def import_wordlist(path: str | Path, name: str) -> ImportResult:
    """Register a ``word,f|m`` word list under ``name`` (the same content twice changes nothing)."""
    validate_name(name, "word list")
    words = load_wordlist(Path(path).resolve(), name)
    existing = WordList.objects.filter(sha256=words.sha256).first()
    if existing is not None:
        return ImportResult(existing, False, Skipped())
    return ImportResult(register_wordlist(words), True, Skipped())


#: What the site and the API can import, and what each is called in messages.
IMPORT_KINDS = {"collection": "collection", "queries": "query set", "run": "run", "wordlist": "word list"}


def import_file(
    kind: str, path: str | Path, name: str, options: dict, *, job: Job | None = None, bar: bool = True
) -> ImportResult:
    """One entry point for the four imports (``options``: ``skip_bad_lines``, and for runs
    ``collection`` and ``order``), as pages, the API and their background task call them."""
    skip = bool(options.get("skip_bad_lines"))
    if kind == "collection":
        return import_collection(path, name, skip_bad_lines=skip, job=job, bar=bar)
    if kind == "queries":
        return import_queries(path, name, skip_bad_lines=skip)
    if kind == "run":
        collection = Collection.objects.filter(name=options.get("collection", "")).first()
        if collection is None:
            raise ServiceError(f"collection: no collection named {options.get('collection')!r}; import it first")
        return import_run(path, name, collection, order=options.get("order", Run.Order.SCORE), skip_bad_lines=skip)
    if kind == "wordlist":
        return import_wordlist(path, name)
    raise ServiceError(f"unknown import kind {kind!r}; choose one of {', '.join(IMPORT_KINDS)}")


def start_import(
    kind: str, path: str | Path, name: str, options: dict, *, uploaded: bool = False, file_name: str = ""
) -> Job:
    """Import a file as a Celery task once the caller's transaction commits; returns its Job.

    ``uploaded``: the file was uploaded for this import (under ``uploads/``); it is removed
    if the import fails or finds the same content already imported, and kept otherwise
    (a collection stays in its file). ``file_name``: the name the uploader gave the file.
    """
    if kind not in IMPORT_KINDS:
        raise ServiceError(f"unknown import kind {kind!r}; choose one of {', '.join(IMPORT_KINDS)}")
    validate_name(name, IMPORT_KINDS[kind])
    from .tasks import import_task

    return start_job(
        import_task,
        "import",
        f"Import {IMPORT_KINDS[kind]} {name} from {file_name or Path(path).name}",
        kind,
        str(path),
        name,
        dict(options),
        uploaded,
    )


# --- word lists and counts -------------------------------------------------------------


def register_wordlist(words: GenderWords | None = None) -> WordList:
    """The stored record of a word list (default: the 32 + 32 definitional words)."""
    words = words or default_wordlist()
    record, _ = WordList.objects.get_or_create(sha256=words.sha256, defaults={"name": words.name, "words": words.words})
    return record


def wordlist_of(record: WordList) -> GenderWords:
    return wordlist_from_mapping(record.words, record.name)


def document_counts_for(
    collection: Collection,
    docids: Iterable[str] | pl.Series,
    wordlist: GenderWords,
    tokenizer: str = DEFAULT_TOKENIZER,
    *,
    job: Job | None = None,
    bar: bool = True,
) -> pl.DataFrame:
    """Counts ``docid, f, m, length`` for ``docids``, from the cache or one pass over the collection.

    The cache is per (collection content, word list content, tokenizer) and grows with
    the documents analyses ask for.
    """
    import polars as pl

    from . import magnitudes as mag

    check_tokenizer(tokenizer)
    wanted = pl.Series("docid", docids, dtype=pl.String).unique()
    cache = cache_dir("counts") / f"{collection.sha256[:20]}-{wordlist.sha256[:20]}-{tokenizer}.parquet"
    cached = pl.read_parquet(cache) if cache.exists() else pl.DataFrame(schema=mag.COUNT_SCHEMA)
    missing = wanted.to_frame().join(cached.select("docid"), on="docid", how="anti")["docid"]
    if len(missing):
        path = _check_unchanged(collection)
        spans = passage_spans(collection, missing)
        with _byte_progress(path, f"Counting gender words in {len(missing):,} passages", job, bar) as progress:
            if spans is None:  # one pass over the whole file
                fresh = mag.document_counts(path, missing, wordlist, tokenizer, progress=progress.update_to)
            else:  # just the passages' bytes, found in the index
                fresh = mag.document_counts_at(path, spans, wordlist, tokenizer, progress=progress.update_to)
        cached = pl.concat([cached, fresh])
        write_parquet_atomic(cached, cache)
    return cached.join(wanted.to_frame(), on="docid", how="semi")


def _check_unchanged(collection: Collection) -> Path:
    """The collection's file, if it is still there with the imported size (the spans in its
    index are byte offsets into it)."""
    path = Path(collection.path)
    if not path.is_file() or path.stat().st_size != collection.size:
        raise ServiceError(
            f"collection {collection.name!r}: {path} is missing or changed since it was imported; import it again"
        )
    return path


def document_counts_chunked(
    collection: Collection,
    docids: Iterable[str] | pl.Series | None,
    wordlist: GenderWords,
    tokenizer: str = DEFAULT_TOKENIZER,
    *,
    chunks: int = 2,
    timeout: float = 3600.0,
) -> pl.DataFrame:
    """Counts ``docid, f, m, length`` for ``docids``, the collection scan split over Celery workers.

    The file is cut into ``chunks`` byte ranges at line starts (a gzipped file cannot be
    split: it is one chunk), each counted by a ``count_scan_chunk_task``, and the chunks'
    counts concatenated (every line is in exactly one chunk, so this equals one pass).
    Each chunk is a :class:`ScanChunk` row: calling again after a lost worker counts only
    the chunks still pending, and a done chunk is never counted twice. Completion is read
    from those rows (the project keeps no Celery result backend), waiting up to ``timeout``
    seconds. ``docids=None`` counts every passage (no id filter per block).
    """
    import polars as pl
    from celery import group

    from .readers import byte_ranges
    from .tasks import count_scan_chunk_task

    if tokenizer not in TOKENIZERS:
        raise ServiceError(f"unknown tokenizer {tokenizer!r}; choose one of {', '.join(TOKENIZERS)}")
    path = _check_unchanged(collection)
    ranges = byte_ranges(path, chunks)
    if docids is None:
        wanted_sha = "all"
    else:
        wanted = pl.Series("docid", docids, dtype=pl.String).unique().sort()
        wanted_sha = hashlib.sha256("\n".join(wanted.to_list()).encode()).hexdigest()
    key = f"{collection.sha256[:16]}-{wordlist.sha256[:16]}-{tokenizer}-{wanted_sha[:16]}-{len(ranges)}"
    wanted_path = cache_dir("scans", key) / "docids.parquet"
    if docids is not None and not wanted_path.exists():
        write_parquet_atomic(wanted.to_frame(), wanted_path)
    record = register_wordlist(wordlist)
    with transaction.atomic():
        for index, (start, end) in enumerate(ranges):
            ScanChunk.objects.get_or_create(key=key, index=index, defaults={"start": start, "end": end})
    pending = list(ScanChunk.objects.filter(key=key, status=ScanChunk.Status.PENDING).values_list("pk", flat=True))
    if pending:
        group(count_scan_chunk_task.s(pk, collection.pk, record.pk, tokenizer) for pk in pending).apply_async()
        _wait_for_chunks(key, timeout)
    done = list(ScanChunk.objects.filter(key=key).order_by("index"))
    unfinished = [chunk.index for chunk in done if chunk.status != ScanChunk.Status.DONE]
    if unfinished:
        raise ServiceError(f"chunks {unfinished} of the scan are not done; run again to count them")
    return pl.concat([pl.read_parquet(chunk.result) for chunk in done])


def _wait_for_chunks(key: str, timeout: float) -> None:
    import time

    deadline = time.monotonic() + timeout
    while ScanChunk.objects.filter(key=key, status=ScanChunk.Status.PENDING).exists():
        if time.monotonic() > deadline:
            return  # the caller reports the unfinished chunks
        time.sleep(0.1)


def count_scan_chunk(chunk_id: int, collection_id: int, wordlist_id: int, tokenizer: str) -> None:
    """Count one chunk of a split scan (the body of ``count_scan_chunk_task``).

    Idempotent: a done chunk is left alone; otherwise the counts file is written
    atomically first and the chunk marked done after, so a worker lost in between leaves
    the chunk pending (to be redone) rather than done without its file.
    """
    import polars as pl

    from . import magnitudes as mag

    chunk = ScanChunk.objects.get(pk=chunk_id)
    if chunk.status == ScanChunk.Status.DONE and Path(chunk.result).exists():
        return
    collection = Collection.objects.get(pk=collection_id)
    path = _check_unchanged(collection)
    folder = cache_dir("scans", chunk.key)
    wanted_path = folder / "docids.parquet"  # absent: every passage
    wanted = pl.read_parquet(wanted_path)["docid"] if wanted_path.exists() else None
    words = wordlist_of(WordList.objects.get(pk=wordlist_id))
    counts = mag.document_counts(path, wanted, words, tokenizer, byte_range=(chunk.start, chunk.end))
    result = folder / f"chunk-{chunk.index}.parquet"
    write_parquet_atomic(counts, result)
    ScanChunk.objects.filter(pk=chunk_id).update(status=ScanChunk.Status.DONE, result=str(result))


# --- pools -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolSettings:
    rank_cutoff: int = 10
    depth: int = 500
    magnitude: str = "tf"
    tokenizer: str = DEFAULT_TOKENIZER

    def validate(self) -> None:
        check_at_least_one(self.rank_cutoff, "rank cutoff")
        check_at_least_one(self.depth, "pool depth")
        check_magnitude(self.magnitude)
        check_tokenizer(self.tokenizer)


def build_pool(
    name: str,
    query_set: QuerySet,
    runs: Sequence[Run],
    pool_settings: PoolSettings = PoolSettings(),
    wordlist: GenderWords | None = None,
    *,
    job: Job | None = None,
    bar: bool = True,
) -> Pool:
    """Pool the most female- and male-leaning queries of every run.

    Builds, per run, RaB@cutoff over the queries of ``query_set`` the run contains, the
    two lists, and their union; stores the pooled queries as a new query set named like
    the pool, with provenance per (query, run).
    """
    import polars as pl

    from . import magnitudes as mag
    from .pool import FEMALE_LIST, MALE_LIST, pool_queries
    from .rank_bias import rank_bias_columns

    pool_settings.validate()
    validate_name(name, "pool")
    check_same_collection(runs, "a pool")
    if Pool.objects.filter(name=name).exists() or QuerySet.objects.filter(name=name).exists():
        raise ServiceError(f"a pool or query set named {name!r} already exists; choose another name")
    words = wordlist or default_wordlist()
    texts = dict(query_set.queries.values_list("qid", "text"))
    qids = pl.Series("qid", list(texts), dtype=pl.String)

    frames = top_rankings(runs, qids, pool_settings.rank_cutoff, repr(query_set.name))
    docids = pl.concat([f["docid"] for f in frames.values()]).unique()
    counts = document_counts_for(runs[0].collection, docids, words, pool_settings.tokenizer, job=job, bar=bar)
    magnitudes = mag.magnitudes_frame(counts, pool_settings.magnitude)
    column = f"RaB@{pool_settings.rank_cutoff}"
    rank_bias = {}
    for run_name, frame in frames.items():
        run_qids, columns = rank_bias_columns(frame, magnitudes, [pool_settings.rank_cutoff])
        rank_bias[run_name] = dict(zip(run_qids, columns[column].tolist(), strict=True))
    result = pool_queries(rank_bias, pool_settings.depth)

    with transaction.atomic():
        pooled = create_query_set(
            name,
            [(qid, texts[qid]) for qid in result.qids],
            origin=QuerySet.Origin.POOL,
            source=f"pool of {query_set.name}",
            description=f"Top {pool_settings.depth} of the female- and male-leaning lists of {len(runs)} run(s)",
        )
        pool = Pool.objects.create(
            name=name,
            source=query_set,
            queries=pooled,
            wordlist=register_wordlist(words),
            rank_cutoff=pool_settings.rank_cutoff,
            depth=pool_settings.depth,
            magnitude=pool_settings.magnitude,
            tokenizer=pool_settings.tokenizer,
        )
        pool.runs.set(runs)
        query_ids = dict(pooled.queries.values_list("qid", "pk"))
        positions = {
            (run, list_name, qid): position
            for run, list_name, qid, position in result.selections.select("run", "list", "qid", "position").iter_rows()
        }
        entries = []
        for run in runs:
            values = rank_bias[run.name]
            for qid in result.qids:
                value = values.get(qid)
                entries.append(
                    (
                        pool.pk,
                        query_ids[qid],
                        run.pk,
                        None if value is None else float(value),
                        positions.get((run.name, FEMALE_LIST, qid)),
                        positions.get((run.name, MALE_LIST, qid)),
                    )
                )
        insert_rows(
            PoolEntry, ["pool_id", "query_id", "run_id", "rank_bias", "female_position", "male_position"], entries
        )
    return pool


def start_pool(
    name: str,
    query_set: QuerySet,
    runs: Sequence[Run],
    pool_settings: PoolSettings,
    wordlist_path: str = "",
    *,
    wordlist: WordList | None = None,
) -> Job:
    """Build a pool as a Celery task once the caller's transaction commits; returns its Job.

    The word list is a file (``wordlist_path``, the command's ``--wordlist``) or an
    imported one (``wordlist``, the pool form's choice); neither means the built-in list.
    """
    from .tasks import build_pool_task

    return start_job(
        build_pool_task,
        "pool",
        f"Pool {name}",
        name,
        query_set.pk,
        [run.pk for run in runs],
        asdict(pool_settings),
        wordlist_path,
        wordlist.pk if wordlist is not None else None,
    )


def write_query_file(query_set: QuerySet, path: str | Path) -> int:
    """Write the query set as a query file atomically; returns the number written."""
    return write_queries(query_set.queries.order_by("position").values_list("qid", "text"), path)


def pool_table(pool: Pool) -> tuple[list[str], list[dict]]:
    """Rows for the pool page and download: one per pooled query, with its RaB per run and
    where each run's lists put it (``selected``: run → (female position, male position))."""
    from .pool import sort_qids

    runs = [run.name for run in pool.runs.order_by("name")]
    rows: dict[str, dict] = {}
    for qid, text, run, rab, female, male in pool.entries.values_list(
        "query__qid", "query__text", "run__name", "rank_bias", "female_position", "male_position"
    ):
        row = rows.setdefault(qid, {"qid": qid, "query": text, "rab": {}, "selected": {}, "lists": []})
        row["rab"][run] = rab
        if female or male:
            row["selected"][run] = (female, male)
        if female:
            row["lists"].append(f"{run}:female#{female}")
        if male:
            row["lists"].append(f"{run}:male#{male}")
    return runs, [rows[qid] for qid in sort_qids(rows)]


def summarise_pool(runs: list[str], rows: list[dict]) -> dict:
    """Size, per-list counts and pairwise overlap (Jaccard) between runs' selections, from ``pool_table``."""
    selected = {run: {row["qid"] for row in rows if run in row["selected"]} for run in runs}
    overlap = [
        [
            len(selected[a] & selected[b]) / len(selected[a] | selected[b]) if selected[a] | selected[b] else 0.0
            for b in runs
        ]
        for a in runs
    ]
    per_list = [
        {
            "run": run,
            "female": sum(1 for row in rows if row["selected"].get(run, (None, None))[0]),
            "male": sum(1 for row in rows if row["selected"].get(run, (None, None))[1]),
            "only_here": len(selected[run] - set().union(*(selected[o] for o in runs if o != run))),
        }
        for run in runs
    ]
    return {"size": len(rows), "runs": runs, "per_list": per_list, "overlap": overlap}

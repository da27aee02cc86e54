"""Gender-word counts of passages (``docid, f, m, length``): cached, or one scan split over workers.

Counting reads the collection's file, so it is the slow step of a pool or a report.
:func:`document_counts_for` is the cached entry point: the cache is per (collection
content, word list content, tokenizer), grows with the passages analyses ask for, and
reads only those passages' bytes when the docid index holds their spans.
:func:`document_counts_chunked` splits one scan over Celery workers, each chunk a
:class:`~pooling.models.ScanChunk` row that is idempotent on its own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from django.db import transaction

from core.models import Job
from core.services.storage import cache_dir
from genderbias.errors import ServiceError
from genderbias.files.atomic import write_parquet_atomic
from genderbias.text.tokenize import DEFAULT_TOKENIZER, tokenizer_key
from genderbias.text.wordlists import GenderWords

from ..analysis import check_tokenizer
from ..models import Collection, ScanChunk, WordList
from ..selectors import passage_spans, wordlist_of
from .common import byte_progress, wait_for_chunks
from .imports import register_wordlist

if TYPE_CHECKING:
    import polars as pl


def document_counts_for(
    collection: Collection,
    docids: Iterable[str] | pl.Series,
    wordlist: GenderWords,
    tokenizer: str = DEFAULT_TOKENIZER,
    *,
    lengths: bool = True,
    job: Job | None = None,
    bar: bool = True,
) -> pl.DataFrame:
    """Counts ``docid, f, m, length`` for ``docids``, from the cache or one pass over the collection.

    The cache is per (collection content, word list content, tokenizer) and grows with
    the documents analyses ask for. ``lengths=False`` (a pool, which needs only ``f`` and
    ``m``) does not count the passages' tokens: their ``length`` is null, in the answer
    and in the cache, and a later call with ``lengths=True`` (a report) counts those
    passages again, whole, and keeps the new row.
    """
    import polars as pl

    from genderbias.text import magnitudes as mag

    check_tokenizer(tokenizer)
    wanted = pl.Series("docid", docids, dtype=pl.String).unique()
    cache = _cache_path(collection, wordlist, tokenizer)
    cached = pl.read_parquet(cache) if cache.exists() else None
    if cached is None and not len(wanted):
        return pl.DataFrame(schema=mag.COUNT_SCHEMA)
    missing = _missing(cached, wanted, lengths)
    if not len(missing):
        return cached.join(wanted.to_frame(), on="docid", how="semi")
    path = _check_unchanged(collection)
    spans = passage_spans(collection, missing)
    with byte_progress(path, f"Counting gender words in {len(missing):,} passages", job, bar) as progress:
        if spans is None:  # one pass over the whole file
            fresh = mag.document_counts(path, missing, wordlist, tokenizer, progress.update_to, lengths=lengths)
        else:  # just the passages' bytes, found in the index
            fresh = mag.document_counts_at(path, spans, wordlist, tokenizer, progress.update_to, lengths=lengths)
    if cached is None:  # the first counts of this (collection, word list, tokenizer): all were asked for
        _store(cache, None, fresh)
        return fresh
    return _store(cache, cached, fresh).join(wanted.to_frame(), on="docid", how="semi")


def count_ahead(
    collection: Collection,
    docids: Iterable[str] | pl.Series,
    wordlist: GenderWords,
    tokenizers: Iterable[str],
    *,
    bar: bool = True,
) -> None:
    """Fill the counts cache of each of ``tokenizers`` with ``docids``' ``f`` and ``m`` (not their
    lengths), as :func:`document_counts_for` with ``lengths=False`` would for each, every passage
    missing from any of them read once (:func:`~genderbias.text.magnitudes.document_counts_at_each`). A
    collection without spans in its index is counted a tokenizer at a time, as that function does.
    """
    import polars as pl

    from genderbias.text import magnitudes as mag

    tokenizers = list(dict.fromkeys(tokenizers))
    for tokenizer in tokenizers:
        check_tokenizer(tokenizer)
    wanted = pl.Series("docid", docids, dtype=pl.String).unique()
    caches = {tokenizer: _cache_path(collection, wordlist, tokenizer) for tokenizer in tokenizers}
    cached = {tokenizer: pl.read_parquet(path) if path.exists() else None for tokenizer, path in caches.items()}
    missing = {tokenizer: _missing(rows, wanted, lengths=False) for tokenizer, rows in cached.items()}
    union = pl.concat(list(missing.values())).unique() if missing else wanted.head(0)
    if not len(union):
        return
    path = _check_unchanged(collection)
    spans = passage_spans(collection, union)
    if spans is None:
        for tokenizer in tokenizers:
            document_counts_for(collection, missing[tokenizer], wordlist, tokenizer, lengths=False, bar=bar)
        return
    with byte_progress(path, f"Counting gender words in {len(union):,} passages", None, bar) as progress:
        fresh = mag.document_counts_at_each(path, spans, wordlist, tokenizers, progress.update_to, lengths=False)
    for tokenizer in tokenizers:
        counts = fresh[tokenizer].join(missing[tokenizer].to_frame(), on="docid", how="semi")
        _store(caches[tokenizer], cached[tokenizer], counts)


def _missing(cached: pl.DataFrame | None, wanted: pl.Series, lengths: bool) -> pl.Series:
    """The docids of ``wanted`` the cache cannot answer: not in it, or (``lengths``) in it without their length."""
    import polars as pl

    if cached is None:
        return wanted
    complete = cached if not lengths else cached.filter(pl.col("length").is_not_null())
    return wanted.to_frame().join(complete.select("docid"), on="docid", how="anti")["docid"]


def _store(cache: Path, cached: pl.DataFrame | None, fresh: pl.DataFrame) -> pl.DataFrame:
    """The cache's rows with ``fresh`` in (a row counted again, e.g. now with its length, replaces the
    older one), written atomically: the one writer of the counts cache."""
    import polars as pl

    if cached is not None:
        fresh = pl.concat([cached.join(fresh.select("docid"), on="docid", how="anti"), fresh])
    write_parquet_atomic(fresh, cache, compression="lz4")
    return fresh


def _cache_path(collection: Collection, wordlist: GenderWords, tokenizer: str) -> Path:
    """The counts cache of a (collection content, word list content, tokenizer definition): keyed by
    what it holds, never by a name, so the same words from a file, the API or the site (a word list's
    name is where it came from) reuse what ``import_run`` counted ahead with the built-in list."""
    return cache_dir("counts") / f"{collection.sha256[:20]}-{wordlist.sha256[:20]}-{tokenizer_key(tokenizer)}.parquet"


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

    from core.tasks import task_named
    from genderbias.files.blocks import byte_ranges

    check_tokenizer(tokenizer)
    path = _check_unchanged(collection)
    ranges = byte_ranges(path, chunks)
    if docids is None:
        wanted_sha = "all"
    else:
        wanted = pl.Series("docid", docids, dtype=pl.String).unique().sort()
        wanted_sha = hashlib.sha256("\n".join(wanted.to_list()).encode()).hexdigest()
    key = f"{collection.sha256[:16]}-{wordlist.sha256[:16]}-{tokenizer_key(tokenizer)}-{wanted_sha[:16]}-{len(ranges)}"
    wanted_path = cache_dir("scans", key) / "docids.parquet"
    if docids is not None and not wanted_path.exists():
        write_parquet_atomic(wanted.to_frame(), wanted_path)
    record = register_wordlist(wordlist)
    with transaction.atomic():
        for index, (start, end) in enumerate(ranges):
            ScanChunk.objects.get_or_create(key=key, index=index, defaults={"start": start, "end": end})
    pending = list(ScanChunk.objects.filter(key=key, status=ScanChunk.Status.PENDING).values_list("pk", flat=True))
    if pending:
        count_scan_chunk_task = task_named("pooling.tasks.count_scan_chunk_task")
        group(count_scan_chunk_task.s(pk, collection.pk, record.pk, tokenizer) for pk in pending).apply_async()
        wait_for_chunks(key, timeout)
    done = list(ScanChunk.objects.filter(key=key).order_by("index"))
    unfinished = [chunk.index for chunk in done if chunk.status != ScanChunk.Status.DONE]
    if unfinished:
        raise ServiceError(f"chunks {unfinished} of the scan are not done; run again to count them")
    return pl.concat([pl.read_parquet(chunk.result) for chunk in done])


def count_scan_chunk(chunk_id: int, collection_id: int, wordlist_id: int, tokenizer: str) -> None:
    """Count one chunk of a split scan (the body of ``count_scan_chunk_task``).

    Idempotent: a done chunk is left alone; otherwise the counts file is written
    atomically first and the chunk marked done after, so a worker lost in between leaves
    the chunk pending (to be redone) rather than done without its file.
    """
    import polars as pl

    from genderbias.text import magnitudes as mag

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

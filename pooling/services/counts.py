"""Gender-word counts of passages (``docid, f, m, length``): cached, or one scan split over workers.

Counting reads the collection, the slow step of a pool or a report. :func:`document_counts_for`
is the cached entry point: the cache is keyed by content (collection, word list, tokenizer), grows
with the passages asked for, and reads only their bytes when the docid index holds their spans. A
collection by reference is read by docid, each text kept (:func:`texts_by_reference`).
:func:`document_counts_chunked` splits one scan over Celery workers, each chunk a
:class:`~pooling.models.ScanChunk` row, idempotent on its own: calling again after a lost worker
does only the chunks still pending.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from django.db import transaction

from core.errors import ServiceError
from core.models import Job
from core.progress import Progress
from core.services.storage import cache_dir
from genderbias.errors import InputError
from genderbias.files import docstores
from genderbias.files.atomic import write_parquet_atomic
from genderbias.text.tokenize import DEFAULT_TOKENIZER, tokenizer_key
from genderbias.text.wordlists import GenderWords

from ..analysis import check_tokenizer
from ..models import Collection, ScanChunk, WordList
from ..selectors import collection_texts, passage_spans, wordlist_of
from .common import byte_progress, run_chunks
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

    ``lengths=False`` (a pool) leaves ``length`` null, in the answer and the cache; a later call with
    ``lengths=True`` (a report) counts those passages again and keeps the new row.
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
    if collection.by_reference:
        fresh = counts_by_reference(collection, missing, wordlist, [tokenizer], lengths=lengths, job=job, bar=bar)
        fresh = fresh[tokenizer]
    else:
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
    chunks: int | None = None,
) -> None:
    """Fill the counts cache of each of ``tokenizers`` as :func:`document_counts_for` with
    ``lengths=False`` would, each missing passage read once for all (where the index holds spans).
    ``chunks``: a collection by reference's texts are read over Celery workers (:func:`read_texts_chunked`).
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
    if collection.by_reference:
        fresh = counts_by_reference(collection, union, wordlist, tokenizers, lengths=False, bar=bar, chunks=chunks)
    else:
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


def counts_by_reference(
    collection: Collection,
    docids: pl.Series,
    wordlist: GenderWords,
    tokenizers: Iterable[str],
    *,
    lengths: bool = True,
    job: Job | None = None,
    bar: bool = True,
    chunks: int | None = None,
) -> dict[str, pl.DataFrame]:
    """Counts of ``docids`` under each of ``tokenizers`` (tokenizer → ``docid, f, m, length``) in a
    collection by reference, its texts read by docid (:func:`texts_by_reference`)."""
    from genderbias.text import magnitudes as mag

    tokenizers = list(dict.fromkeys(tokenizers))
    docids = docids.unique()
    with Progress(f"Counting gender words in {len(docids):,} passages", None, job=job, bar=bar):
        texts = texts_by_reference(collection, docids, chunks=chunks)
        return {tokenizer: mag.count_frame(texts, wordlist, tokenizer, lengths) for tokenizer in tokenizers}


def texts_by_reference(
    collection: Collection, docids: Iterable[str] | pl.Series, *, chunks: int | None = None, batch: int = 50_000
) -> pl.DataFrame:
    """``docid, text`` of ``docids`` in a collection by reference, each text read from the collection once
    (``batch`` at a time) and kept in its texts cache (a Parquet file per read, never rewritten). A docid
    the collection lacks is refused, naming it (a run's docids could not all be checked at import).
    ``chunks`` (≥ 1): the texts not cached are read by Celery workers (:func:`read_texts_chunked`)."""
    import polars as pl

    wanted = pl.Series("docid", docids, dtype=pl.String).unique()
    cached, lacking = _cached_texts(collection, wanted)
    if not len(lacking):
        return cached
    if chunks:
        read_texts_chunked(collection, lacking, chunks=chunks)
        return pl.concat([cached, _cached_texts(collection, lacking)[0]])
    store = collection_texts(collection)
    fresh = []
    for start in range(0, len(lacking), batch):
        asked = lacking.slice(start, batch)
        texts = docstores.read_texts(store, asked)
        _check_found(collection, asked, texts)
        write_parquet_atomic(texts, _texts_folder(collection) / f"{uuid.uuid4().hex}.parquet", compression="lz4")
        fresh.append(texts)
    return pl.concat([cached, *fresh])


def _cached_texts(collection: Collection, wanted: pl.Series) -> tuple[pl.DataFrame, pl.Series]:
    """``(docid, text`` of ``wanted`` in the texts cache, the docids of ``wanted`` not in it)."""
    import polars as pl

    parts = sorted(_texts_folder(collection).glob("*.parquet"))
    cached = (
        pl.scan_parquet(parts).join(wanted.to_frame().lazy(), on="docid", how="semi").collect()
        if parts
        else pl.DataFrame(schema=docstores.text_schema())
    )
    return cached, wanted.to_frame().join(cached.select("docid"), on="docid", how="anti")["docid"]


def _check_found(collection: Collection, asked: pl.Series, texts: pl.DataFrame) -> None:
    """Refuse docids asked for that the collection does not hold, naming the first three."""
    if len(texts) < len(asked):
        absent = asked.to_frame().join(texts.select("docid"), on="docid", how="anti")["docid"]
        more = f" (and {len(absent) - 3:,} more)" if len(absent) > 3 else ""
        raise ServiceError(
            f"collection {collection.name!r} has no passage {', '.join(absent.head(3).to_list())}{more}, "
            "which the runs rank"
        )


def read_texts_chunked(collection: Collection, docids: pl.Series, *, chunks: int = 2, timeout: float = 3600.0) -> None:
    """Read the texts of ``docids`` into the collection's texts cache over Celery workers, split by
    bundle file (largest first to the chunk holding fewest), so each worker seeks in its own files;
    an ir_datasets docstore's docids are dealt out by hash. A passage the collection lacks fails the
    read, naming it."""
    import polars as pl

    docids = docids.unique().sort()
    if not len(docids):
        return
    if collection.kind == Collection.Kind.MSMARCO_V2:
        bundle = docids.str.extract(docstores.V2_DOCID.pattern, 1).fill_null("")
    else:
        bundle = (docids.hash(seed=0) % max(chunks, 1)).cast(pl.String)
    frame = pl.DataFrame({"docid": docids, "bundle": bundle})
    sizes = frame.group_by("bundle").len().sort(["len", "bundle"], descending=[True, False])
    loads = [0] * max(1, min(chunks, len(sizes)))
    assigned = {}
    for name, size in sizes.iter_rows():
        target = loads.index(min(loads))
        assigned[name] = target
        loads[target] += size
    frame = frame.with_columns(pl.col("bundle").replace_strict(assigned, return_dtype=pl.Int64).alias("chunk"))
    wanted_sha = hashlib.sha256("\n".join(docids.to_list()).encode()).hexdigest()
    key = f"texts-{collection.sha256[:16]}-{wanted_sha[:16]}-{len(loads)}"
    folder = cache_dir("scans", key)
    with transaction.atomic():
        for index in range(len(loads)):
            part = frame.filter(pl.col("chunk") == index).select("docid")
            path = folder / f"docids-{index}.parquet"
            if not path.exists():
                write_parquet_atomic(part, path)
            ScanChunk.objects.get_or_create(key=key, index=index, defaults={"start": 0, "end": len(part)})
    done = run_chunks(key, "pooling.tasks.read_texts_chunk_task", collection.pk, timeout=timeout)
    failed = [chunk for chunk in done if chunk.status == ScanChunk.Status.FAILED]
    unfinished = [chunk.index for chunk in done if chunk.status == ScanChunk.Status.PENDING]
    if failed:
        ScanChunk.objects.filter(key=key).delete()
        raise ServiceError(failed[0].error)
    if unfinished:
        raise ServiceError(f"chunks {unfinished} of the texts' reading are not done; run again to read them")
    ScanChunk.objects.filter(key=key).delete()  # read: the texts are in the cache


def read_texts_chunk(chunk_id: int, collection_id: int) -> None:
    """Read one chunk of :func:`read_texts_chunked` into the texts cache (``read_texts_chunk_task``); a
    done or failed chunk is left alone, and the texts are written before the chunk is marked done."""
    import polars as pl

    chunk = ScanChunk.objects.get(pk=chunk_id)
    if chunk.status != ScanChunk.Status.PENDING:
        return
    collection = Collection.objects.get(pk=collection_id)
    asked = pl.read_parquet(cache_dir("scans", chunk.key) / f"docids-{chunk.index}.parquet")["docid"]
    try:
        texts = docstores.read_texts(collection_texts(collection), asked)
        _check_found(collection, asked, texts)
    except (ServiceError, InputError) as exc:
        ScanChunk.objects.filter(pk=chunk_id).update(status=ScanChunk.Status.FAILED, error=str(exc))
        return
    result = _texts_folder(collection) / f"{chunk.key}-{chunk.index}.parquet"
    write_parquet_atomic(texts, result, compression="lz4")
    ScanChunk.objects.filter(pk=chunk_id).update(status=ScanChunk.Status.DONE, result=str(result))


def _texts_folder(collection: Collection) -> Path:
    """The texts cache of a collection by reference (by its sha256: the same reference, the same texts)."""
    return cache_dir("texts", collection.sha256[:24])


def texts_checksum(collection: Collection, docids: Iterable[str] | pl.Series) -> tuple[str, int]:
    """``(checksum, texts)`` of the texts of ``docids`` in a collection by reference: what a report
    records so that the texts it read can be checked again, wherever they are read from."""
    texts = texts_by_reference(collection, docids)
    return docstores.checksum_of_texts(texts), len(texts)


def _missing(cached: pl.DataFrame | None, wanted: pl.Series, lengths: bool) -> pl.Series:
    """The docids of ``wanted`` the cache cannot answer: not in it, or (``lengths``) in it without their length."""
    import polars as pl

    if cached is None:
        return wanted
    complete = cached if not lengths else cached.filter(pl.col("length").is_not_null())
    return wanted.to_frame().join(complete.select("docid"), on="docid", how="anti")["docid"]


def _store(cache: Path, cached: pl.DataFrame | None, fresh: pl.DataFrame) -> pl.DataFrame:
    """The cache's rows with ``fresh`` in (replacing a row counted again), written atomically: the one writer."""
    import polars as pl

    if cached is not None:
        fresh = pl.concat([cached.join(fresh.select("docid"), on="docid", how="anti"), fresh])
    write_parquet_atomic(fresh, cache, compression="lz4")
    return fresh


def _cache_path(collection: Collection, wordlist: GenderWords, tokenizer: str) -> Path:
    """The counts cache of a (collection content, word list content, tokenizer definition): keyed by
    content, never a name, so the same words from anywhere reuse what ``import_run`` counted ahead."""
    return cache_dir("counts") / f"{collection.sha256[:20]}-{wordlist.sha256[:20]}-{tokenizer_key(tokenizer)}.parquet"


def _check_unchanged(collection: Collection) -> Path:
    """The collection's file, if still there with the imported size (its index's spans are byte offsets)."""
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
    """Counts ``docid, f, m, length`` for ``docids`` (``None``: every passage), the collection's file cut
    into ``chunks`` byte ranges at line starts (a gzipped file is one chunk), each counted by a
    ``count_scan_chunk_task``; every line is in one chunk, so this equals one pass.
    """
    import polars as pl

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
    args = (collection.pk, record.pk, tokenizer)
    done = run_chunks(key, "pooling.tasks.count_scan_chunk_task", *args, timeout=timeout)
    unfinished = [chunk.index for chunk in done if chunk.status != ScanChunk.Status.DONE]
    if unfinished:
        raise ServiceError(f"chunks {unfinished} of the scan are not done; run again to count them")
    return pl.concat([pl.read_parquet(chunk.result) for chunk in done])


def count_scan_chunk(chunk_id: int, collection_id: int, wordlist_id: int, tokenizer: str) -> None:
    """Count one chunk of a split scan (``count_scan_chunk_task``); a done chunk is left alone, and the
    counts are written before the chunk is marked done, so a lost worker leaves it pending."""
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

"""A passage collection (``docid<TAB>text`` per line): its scan, the passages of a block, texts by span. Bad
input is an :class:`InputError` naming file and line; read in large blocks (:mod:`genderbias.files.blocks`).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from genderbias.errors import InputError, Skipped, raise_or_skip
from genderbias.files.atomic import atomic_path
from genderbias.files.blocks import BLOCK_SIZE, is_gzipped, iter_blocks

__all__ = ["parse_passages", "read_passage_texts", "scan_collection"]


def parse_passages(
    path: Path, lines: pl.DataFrame, skipped: Skipped | None = None, wanted: pl.Series | None = None
) -> pl.DataFrame:
    """Split ``pid<TAB>passage`` lines on the first tab: frame ``line, docid, text``. The id is stripped, as run
    readers split on whitespace; with ``wanted`` only those docids are kept; when ``lines`` has ``offset``, each
    text's ``start`` and ``length`` in bytes are added (:func:`read_passage_texts`).
    """
    spans = "offset" in lines.columns
    parts = pl.col("text").str.splitn("\t", 2).struct.rename_fields(["id", "passage"])
    frame = lines.select("line", *(["offset"] if spans else []), parts.alias("parts")).unnest("parts")
    frame = frame.with_columns(pl.col("id").str.strip_chars().alias("docid"))
    no_tab = pl.col("passage").is_null() & (pl.col("id") != "")  # an empty line is no passage, and no error
    empty_id = pl.col("passage").is_not_null() & (pl.col("docid") == "")
    bad = frame.filter(no_tab | empty_id)
    for line, passage in bad.select("line", "passage").iter_rows():
        problem = "no tab between passage id and text" if passage is None else "empty passage id"
        raise_or_skip(InputError(path, line, problem), skipped)
    frame = frame.filter(pl.col("passage").is_not_null())
    if len(bad):
        frame = frame.filter(pl.col("docid") != "")
    if wanted is not None:
        frame = frame.filter(pl.col("docid").is_in(wanted.implode()))
    columns = ["line", "docid", pl.col("passage").alias("text")]
    if spans:  # the passage begins one byte (the tab) after the id, in bytes
        start = pl.col("offset") + pl.col("id").str.len_bytes().cast(pl.Int64) + 1
        columns += [start.alias("start"), pl.col("passage").str.len_bytes().cast(pl.Int64).alias("length")]
    return frame.select(columns)


def read_passage_texts(path: str | Path, spans: pl.DataFrame, block_size: int | None = None) -> pl.DataFrame:
    """``docid, text`` in file order at ``spans`` (``docid, start, length``, from a collection's docid index) of a
    plain file whose UTF-8 the import validated. A ``block_size`` window is mapped at a time and unmapped before the
    next, so the bytes no span needs are never copied and the whole file never counts in peak memory.
    """
    import mmap

    block_size = block_size or BLOCK_SIZE
    spans = spans.sort("start")
    starts = spans["start"].to_numpy()
    ends = starts + spans["length"].to_numpy()
    texts: list[bytes] = []
    with open(path, "rb") as file:
        i, n = 0, len(starts)
        while i < n:  # a window at a time: map it, slice its texts, unmap it
            first = int(starts[i])
            j = max(int(np.searchsorted(ends, first + block_size, side="right")), i + 1)
            offset = first - first % mmap.ALLOCATIONGRANULARITY
            size = int(ends[j - 1]) - offset
            if size == 0:  # empty texts at the very start of a window
                texts.extend([b""] * (j - i))
            else:
                with mmap.mmap(file.fileno(), size, offset=offset, access=mmap.ACCESS_READ) as window:
                    window.madvise(mmap.MADV_WILLNEED)
                    pairs = zip((starts[i:j] - offset).tolist(), (ends[i:j] - offset).tolist(), strict=True)
                    texts.extend([window[s:e] for s, e in pairs])
            i = j
    text = pl.Series("text", texts, dtype=pl.Binary).cast(pl.String)
    return pl.DataFrame([spans["docid"], text])


@dataclass
class CollectionScan:
    """What registering a collection learns in one pass."""

    passages: int
    size: int
    sha256: str


def scan_collection(
    path: str | Path,
    index_path: str | Path | None = None,
    progress: Callable[[int], None] | None = None,
    skipped: Skipped | None = None,
) -> CollectionScan:
    """Validate a collection (``pid<TAB>passage`` in UTF-8, no pid repeated), hash it and (with ``index_path``)
    index its docids, in one pass at flat memory: docids stream into the Parquet index, repeats are found from
    8-byte hashes and confirmed exactly. A plain file's index also holds each text's ``start`` and ``length``, so
    some passages' words are read without parsing the file (:func:`read_passage_texts`). ``progress``: the
    (compressed) bytes read so far.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.is_file():
        raise InputError(path, None, "no such file")
    digest = hashlib.sha256()
    hashes: list[np.ndarray] = []
    with atomic_path(index_path) if index_path else contextlib.nullcontext() as tmp:
        writer = None

        def index_block(lines: pl.DataFrame) -> None:
            """Parse one block's passages, hash their docids and add them to the index."""
            nonlocal writer
            passages = parse_passages(path, lines, skipped)
            docids = passages["docid"]
            hashes.append(docids.hash(seed=0).to_numpy())
            if tmp is not None:
                columns = {"docid": docids.to_arrow().cast(pa.large_string())}
                if "start" in passages.columns:
                    columns |= {"start": passages["start"].to_arrow(), "length": passages["length"].to_arrow()}
                table = pa.table(columns)
                writer = writer or pq.ParquetWriter(tmp, table.schema)
                writer.write_table(table)

        # Each block is indexed on a second thread while the next is read (polars and pyarrow let go of the
        # GIL): one thread, so in file order, with at most one block waiting. An error in a block comes
        # before any error found reading the blocks after it, as the file orders them.
        spans = not is_gzipped(path)  # a gzipped file cannot be read at an offset
        blocks = iter_blocks(path, digest=digest, offsets=spans and tmp is not None)
        try:
            with ThreadPoolExecutor(1, thread_name_prefix="index") as indexing:
                pending, position = None, 0
                while True:
                    try:
                        lines, next_position = next(blocks, (None, 0))
                    finally:
                        if pending is not None:
                            pending.result()
                            if progress:
                                progress(position)
                    if lines is None:
                        break
                    pending, position = indexing.submit(index_block, lines), next_position
        finally:
            if writer is not None:
                writer.close()
        passages = sum(len(h) for h in hashes)
        if not passages:
            raise InputError(path, None, "no passages")
        every = np.sort(np.concatenate(hashes))
        repeated = every[1:][every[1:] == every[:-1]]
        if len(repeated):
            _raise_repeated_docid(path, set(repeated.tolist()), skipped)
    return CollectionScan(passages, path.stat().st_size, digest.hexdigest())


def _raise_repeated_docid(path: Path, candidates: set[int], skipped: Skipped | None) -> None:
    """Second pass over the lines whose docid hash repeats: name the first real repeat."""
    seen: dict[str, int] = {}
    for lines, _ in iter_blocks(path):
        frame = parse_passages(path, lines, skipped=Skipped())
        frame = frame.filter(pl.col("docid").hash(seed=0).is_in(list(candidates)))
        for line, docid in frame.select("line", "docid").iter_rows():
            if docid in seen:
                raise InputError(path, line, f"passage id {docid!r} repeats (first on line {seen[docid]})")
            seen[docid] = line

"""Readers for the three inputs: passage collections, query files and TREC runs.

Every reader validates as it reads and reports bad input as an :class:`InputError`
naming the file, the 1-based line and the problem. Files may be gzipped (detected by
content, not by name). Collections and runs are read in large binary blocks and parsed
by polars, so an 8.8M-passage collection streams through in seconds with flat memory;
errors are located exactly (line numbers count every line of the file, blank ones too).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import polars as pl

from genderbias.errors import InputError, Skipped, raise_or_skip
from genderbias.files.atomic import atomic_path
from genderbias.files.runformats import RUN_FORMATS, RUN_ORDERS  # re-exported: the readers' callers name them here
from genderbias.files.textfiles import (
    DECOMPRESSED,
    GZIP_MAGIC,
    MAX_LINE_BYTES,
    BlankRun,
    GunzipStream,
    SizeCounter,
    check_line_lengths,
    decode_utf8,
    line_too_long,
)

BLOCK_SIZE = 16 * 1024 * 1024
UTF8_BOM = b"\xef\xbb\xbf"


class _HashingReader(io.RawIOBase):
    """A read-only stream that counts (and, given a digest, hashes) the raw bytes passing through it."""

    def __init__(self, raw: BinaryIO, digest=None) -> None:
        self.raw, self.digest, self.position = raw, digest, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self.raw.readinto(buffer)
        if n:
            if self.digest is not None:
                self.digest.update(memoryview(buffer)[:n])
            self.position += n
        return n or 0


def is_gzipped(path: str | Path) -> bool:
    with open(path, "rb") as file:
        return file.read(2) == GZIP_MAGIC


def byte_ranges(path: str | Path, chunks: int) -> list[tuple[int, int]]:
    """Split a file into at most ``chunks`` byte ranges ``[start, end)`` that begin at line starts.

    Each boundary is moved forward to just after the next newline, so every line falls in
    exactly one range. A gzipped file cannot be entered in the middle: it is one range.
    """
    path = Path(path)
    size = path.stat().st_size
    if chunks < 1:
        raise ValueError("chunks must be at least 1")
    if is_gzipped(path) or chunks == 1 or size == 0:
        return [(0, size)]
    starts = [0]
    with open(path, "rb") as file:
        for i in range(1, chunks):
            file.seek(max(size * i // chunks - 1, 0))
            # To just after the newline at or after the target, a megabyte at a time (an
            # endless line is refused by the reader, never held here).
            while (piece := file.readline(1024 * 1024)) and not piece.endswith(b"\n"):
                pass
            boundary = file.tell()
            if starts[-1] < boundary < size:
                starts.append(boundary)
    return list(zip(starts, [*starts[1:], size], strict=True))


def line_numbers_at(path: str | Path, positions: list[int]) -> list[int]:
    """The 1-based numbers of the lines starting at the byte ``positions`` (ascending) of a
    plain file: one pass counting newlines, at memory speed."""
    numbers, newlines, read = [], 0, 0
    with open(path, "rb") as file:
        for position in positions:
            while read < position:
                block = file.read(min(BLOCK_SIZE, position - read))
                if not block:
                    break
                newlines += block.count(b"\n")
                read += len(block)
            numbers.append(newlines + 1)
    return numbers


def iter_blocks(
    path: str | Path,
    block_size: int | None = None,
    digest=None,
    byte_range: tuple[int, int] | None = None,
    offsets: bool = False,
    first_line: int = 1,
) -> Iterator[tuple[pl.DataFrame, int]]:
    """Yield ``(lines, bytes_read)`` for blocks of whole lines of a (possibly gzipped) file.

    ``lines`` is a frame ``line: int64, text: str`` with file-wide 1-based line numbers;
    ``bytes_read`` is the (compressed) position in the file, for progress bars. A hashlib
    ``digest`` is fed the file's raw bytes on the way, saving a second pass.
    ``byte_range`` (from :func:`byte_ranges`, plain files only) reads just that range; its
    line numbers then count from ``first_line``, the file's number of the range's first
    line (:func:`line_numbers_at`), or from 1 if not given. ``offsets`` adds
    ``offset: int64``, where each line starts in the (uncompressed) stream.
    Decompression streams block by block, and a line over :data:`MAX_LINE_BYTES` is an
    :class:`InputError` (``path: problem``): memory stays within about two blocks. Past
    :data:`genderbias.files.textfiles.DECOMPRESSED` bytes of the (uncompressed) stream the file is refused
    (:func:`genderbias.files.textfiles.too_large`, naming the line reached).
    """
    path = Path(path)
    block_size = block_size or BLOCK_SIZE
    with open(path, "rb") as file:
        gzipped = file.read(2) == GZIP_MAGIC
        start, end = byte_range or (0, None)
        if gzipped and byte_range not in (None, (0, path.stat().st_size)):
            raise ValueError(f"{path}: a gzipped file cannot be read from the middle")
        file.seek(start)
        remaining = None if end is None else end - start
        # A plain file's blocks are its bytes: they are hashed on a second thread (hashlib lets
        # go of the GIL), beside the parsing of the block before (a gzipped file's compressed
        # bytes are hashed as they are read).
        hasher = _BlockHasher(digest) if digest is not None and not gzipped else None
        raw = _HashingReader(file, None if hasher else digest)
        buffered = io.BufferedReader(raw, buffer_size=1024 * 1024)
        # The one gzip reader (genderbias.files.textfiles): fixed-size blocks, refused past its expansion limit.
        stream: BinaryIO = io.BufferedReader(GunzipStream(path, buffered)) if gzipped else buffered  # type: ignore[assignment]
        line = first_line
        rest = b""
        counter = SizeCounter(path, DECOMPRESSED, start)  # a range of a plain file counts from its start
        blanks = BlankRun(path)
        block_start = start  # where ``rest + chunk`` begins in the uncompressed stream
        while True:
            size = block_size if remaining is None or gzipped else min(block_size, remaining)
            if size == 0:
                break
            chunk = stream.read(size)
            if remaining is not None:
                remaining -= len(chunk)
            if not chunk:
                break
            if hasher:
                hasher.add(chunk)
            counter.add(chunk, line)
            data = rest + chunk
            cut = data.rfind(b"\n") + 1
            block, rest = data[:cut], data[cut:]
            if block:
                check_line_lengths(path, block, line)
                blanks.check(block, line)
                yield lines_frame(path, block, line, block_start if offsets else None), raw.position
                line += block.count(b"\n")
                block_start += cut
            if len(rest) > MAX_LINE_BYTES:  # never gather an endless line (a gzip bomb of NULs)
                raise line_too_long(path, line)
        if rest:
            yield lines_frame(path, rest, line, block_start if offsets else None), raw.position
        if hasher:
            hasher.finish()


class _BlockHasher:
    """Feeds a hashlib digest block after block on one other thread, in order: at most one
    block waits (the next is handed over once the one before is hashed)."""

    def __init__(self, digest) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.digest = digest
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="hash")
        self._pending = None

    def add(self, block: bytes) -> None:
        self._wait()
        self._pending = self._thread.submit(self.digest.update, block)

    def finish(self) -> None:
        """Wait until every block is in the digest (and let the thread go)."""
        self._wait()
        self._thread.shutdown(wait=True)

    def _wait(self) -> None:
        if self._pending is not None:
            self._pending.result()
            self._pending = None


def lines_frame(path: Path, data: bytes, first_line: int, start: int | None = None) -> pl.DataFrame:
    """Bytes of whole lines as a frame ``line: int64, text: str``, validating UTF-8 in Rust.

    Line endings (``\\n`` or ``\\r\\n``) are dropped; on invalid UTF-8 the slow path
    finds the line to name. Given ``start`` (where ``data`` begins in the file), the frame
    also has ``offset: int64``, where each line's ``text`` begins in the file.
    """
    if not data:
        schema = {"line": pl.Int64, "text": pl.String}
        return pl.DataFrame(schema=schema if start is None else {**schema, "offset": pl.Int64})
    try:
        lines = pl.read_lines(data, name="text")
    except pl.exceptions.ComputeError:
        decode_utf8(path, data, first_line)  # raises InputError naming the line
        raise
    bom = first_line == 1 and data.startswith(UTF8_BOM)
    if bom:
        lines = lines.with_columns(pl.col("text").str.strip_prefix("\ufeff"))
    lines = lines.with_row_index("line", offset=first_line).with_columns(pl.col("line").cast(pl.Int64))
    if start is None:
        return lines
    skip = len(UTF8_BOM) if bom else 0  # the first line's text begins after the mark
    if b"\r" in data:  # the texts' lengths do not give the line starts: find the newlines
        starts = np.concatenate([[0], np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10) + 1])[: len(lines)]
        starts[0] += skip
        return lines.with_columns(pl.Series("offset", starts + start, dtype=pl.Int64))
    # Each line is its text and one newline; the mark is not in the first text's length.
    length = pl.col("text").str.len_bytes().cast(pl.Int64) + 1
    return lines.with_columns((length.cum_sum().shift(1, fill_value=0) + (start + skip)).alias("offset"))


# --- collections -------------------------------------------------------------------------


def parse_passages(
    path: Path, lines: pl.DataFrame, skipped: Skipped | None = None, wanted: pl.Series | None = None
) -> pl.DataFrame:
    """Split ``pid<TAB>passage`` lines on the first tab: frame ``line, docid, text``.

    Whitespace around a passage id is stripped (``" c1 "`` is ``c1``), as run and query
    readers do: runs are split on whitespace, so an id kept with its spaces could never
    be matched. With ``wanted``, only those docids are kept. When ``lines`` has
    ``offset`` (:func:`iter_blocks` with ``offsets=True``), the frame also has each
    passage text's place in the file, ``start`` and ``length`` in bytes
    (:func:`read_passage_texts` reads them back).
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
    """The texts at ``spans`` (``docid, start, length``, from a collection's docid index) of a plain file.

    Up to ``block_size`` bytes of the file at a time are mapped, not read: each text is
    sliced from the mapping, so the bytes no span needs (most of the file, for a pool's
    passages) are never copied, and each window is unmapped before the next (the process
    holds no more than one window of the file: a mapping of the whole 2.8 GB of MS MARCO
    would count in its peak memory). The spans come from the import, which validated the
    UTF-8 and whose file size the caller has checked. Returns ``docid, text`` in file order.
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
    """Validate a collection, hash it and (with ``index_path``) index its docids, in one pass.

    Checks every line is ``pid<TAB>passage`` in UTF-8 and that no pid repeats. Memory
    stays flat: docids stream into the Parquet index block by block, and repeats are
    found from 8-byte hashes (confirmed exactly before an error is raised). For a plain
    (not gzipped) file the index also holds where each passage's text is (``start``,
    ``length`` in bytes), so counting words in some passages reads just those
    (:func:`read_passage_texts`) instead of parsing the whole file. ``progress``
    receives the number of (compressed) bytes read so far.
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
        try:
            spans = not is_gzipped(path)  # a gzipped file cannot be read at an offset
            for lines, position in iter_blocks(path, digest=digest, offsets=spans and tmp is not None):
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
                if progress:
                    progress(position)
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


# --- queries -----------------------------------------------------------------------------


# --- runs --------------------------------------------------------------------------------

_RUN_LINES = {
    "trec": (r"^\s*(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$", ["qid", "q0", "docid", "rank", "score", "tag"]),
    "msmarco": (r"^\s*(\S+)\s+(\S+)\s+(\S+)\s*$", ["qid", "docid", "rank"]),
}
_RUN_EXPECTED = {"trec": "6 columns (qid Q0 docid rank score tag)", "msmarco": "3 columns (qid docid rank)"}


#: The columns :func:`parse_run_lines` gives, one row per valid line.
RUN_FIELDS = {"line": pl.Int64, "qid": pl.String, "docid": pl.String, "score": pl.Float64}


@dataclass
class RunTable:
    """A validated run: ``frame`` has ``qid, docid, rank (1-based), score``, grouped by query.

    ``interleaved_queries`` counts the queries whose lines came in more than one block;
    they are gathered (each at its first appearance), as trec_eval does. ``format`` is the
    format read (``trec`` or ``msmarco``); an MS MARCO run has no score, so ``score`` is
    minus the file's rank (higher is better, and the score order is the rank order).
    """

    frame: pl.DataFrame
    reordered_ties: int
    reordered_rows: int
    interleaved_queries: int = 0
    format: str = "trec"

    @property
    def queries(self) -> int:
        return self.frame["qid"].n_unique()


def detect_run_format(path: str | Path) -> str:
    """``trec`` or ``msmarco`` from the column count of the first non-blank line."""
    path = Path(path)
    for lines, _ in iter_blocks(path, block_size=64 * 1024):
        for line, text in lines.iter_rows():
            columns = len(text.split())
            if columns == 0:
                continue
            if columns == 6:
                return "trec"
            if columns == 3:
                return "msmarco"
            raise InputError(
                path, line, f"found {columns} columns: expected 6 (qid Q0 docid rank score tag) or 3 (qid docid rank)"
            )
    raise InputError(path, None, "the run is empty")


def _score_orders(frame: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Row orders by score within each block: ties in file order, and ties by docid descending.

    The second is trec_eval's order. Only the rows inside tie groups are sorted by docid,
    so the whole run is never sorted on strings.
    """
    stable = (
        frame.select(pl.arg_sort_by(["block", "score", "line"], descending=[False, True, False])).to_series().to_numpy()
    )
    block = frame["block"].to_numpy()[stable]
    score = frame["score"].to_numpy()[stable]
    same_as_previous = np.r_[False, (block[1:] == block[:-1]) & (score[1:] == score[:-1])]
    tied = same_as_previous | np.r_[same_as_previous[1:], False]
    trec = stable.copy()
    if tied.any():
        slots = np.flatnonzero(tied)
        ties = pl.DataFrame(
            {"slot": slots, "group": np.cumsum(~same_as_previous)[slots], "docid": frame["docid"].gather(stable[slots])}
        )
        reordered = ties.sort(["group", "docid"], descending=[False, True])["slot"].to_numpy()
        trec[slots] = stable[reordered]
    return stable, trec


def _ranks(block: np.ndarray) -> np.ndarray:
    """1, 2, … within each run of equal values of ``block`` (rows grouped by block)."""
    index = np.arange(len(block))
    starts = np.flatnonzero(np.r_[True, block[1:] != block[:-1]])
    return (index - np.repeat(starts, np.diff(np.r_[starts, len(block)])) + 1).astype(np.int32)


def _repeated_pairs(fields: pl.DataFrame) -> pl.DataFrame:
    """Rows whose (qid, docid) occurred on an earlier line, sorted by line.

    Found from 8-byte hashes of the pairs (a sort of 56 MB for 7M rows) rather than a
    window over the strings (over 1 GB); only rows whose hash repeats are compared exactly.
    """
    keys = fields.select(pl.struct("qid", "docid").hash(seed=0)).to_series().to_numpy()
    ordered = np.sort(keys)
    repeated = np.unique(ordered[1:][ordered[1:] == ordered[:-1]])
    if not len(repeated):
        return fields.clear()
    candidates = fields.filter(pl.Series(np.isin(keys, repeated)))
    first = pl.col("line").min().over("qid", "docid")
    return candidates.filter(pl.col("line") != first).sort("line")


#: The Parquet metadata field of a saved :class:`KnownDocids` index: what it was built from.
KNOWN_INDEX_SOURCE = "pooling.known_docids.source"


class KnownDocids:
    """A collection's docids, for checking runs against: which of a run's docids it holds.

    Built once (each docid beside its 8-byte hash, sorted by hash) and shared by every run
    of the collection read in one process. A check sorts the run's docids by hash and joins
    the two sorted frames (a merge, not a hash table of the whole collection built again per
    run), then compares the strings of the pairs found, so the answer is exact. ``docids`` may be
    a function giving them: then they are read at the first check, so a command that finds every
    run already imported never reads the collection.

    ``saved``: a file to keep the sorted index in between processes (a user importing seven
    runs types seven commands; hashing and sorting a million docids each time was 0.17 s CPU of
    each run's 0.55 s of work, start-up aside; loading them takes 0.04 s). ``source`` names what the docids are (the collection's content hash and
    size) and ``rows`` how many there are; the file is used only if it carries that same source,
    this polars version's hash (:func:`known_index_source`), the same number of rows and hashes in
    order. A missing, unreadable, corrupt or foreign file is rebuilt from ``docids``, never
    trusted; a file that cannot be written is only a lost saving.
    """

    def __init__(
        self,
        docids: pl.Series | Callable[[], pl.Series],
        *,
        saved: Path | None = None,
        source: str = "",
        rows: int | None = None,
    ) -> None:
        self._docids = docids
        self._saved, self._source, self._rows = saved, known_index_source(source), rows

    @functools.cached_property
    def _index(self) -> pl.DataFrame:
        if self._saved is not None:
            index = load_known_index(self._saved, self._source, self._rows)
            if index is not None:
                self._docids = None
                return index
        docids = (self._docids() if callable(self._docids) else self._docids).cast(pl.String)
        self._docids = None
        index = pl.DataFrame({"hash": docids.hash(seed=0), "known": docids}).sort("hash")
        if self._saved is not None and (self._rows is None or index.height == self._rows):
            with contextlib.suppress(OSError, pl.exceptions.PolarsError):  # a lost saving, not a failed import
                save_known_index(index, self._saved, self._source)
        return index

    def __len__(self) -> int:
        return self._index.height

    def contains(self, docids: pl.Series) -> np.ndarray:
        """A boolean per docid: whether the collection holds it."""
        found = np.zeros(len(docids), dtype=bool)
        probe = pl.DataFrame({"row": np.arange(len(docids)), "hash": docids.hash(seed=0), "docid": docids}).sort("hash")
        pairs = probe.join(self._index, on="hash", how="inner")  # a hash shared by two docids gives both pairs
        found[pairs.filter(pl.col("docid") == pl.col("known"))["row"].to_numpy()] = True
        return found


def known_index_source(source: str) -> str:
    """What a saved index must carry: its docids' ``source`` and the hash that sorted them
    (polars' hash is stable within a version, not across versions)."""
    return f"{source}; polars {pl.__version__} hash seed 0"


def save_known_index(index: pl.DataFrame, path: Path, source: str) -> None:
    """Write a :class:`KnownDocids` index (``hash, known``, sorted by hash) atomically, marked with its ``source``."""
    with atomic_path(path) as tmp:
        index.write_parquet(tmp, compression="lz4", metadata={KNOWN_INDEX_SOURCE: source})


def load_known_index(path: Path, source: str, rows: int | None = None) -> pl.DataFrame | None:
    """The index :func:`save_known_index` wrote to ``path`` for ``source``, or ``None`` when the
    file is missing, unreadable, of another source, of another shape or out of order."""
    try:
        if pl.read_parquet_metadata(path).get(KNOWN_INDEX_SOURCE) != source:
            return None
        index = pl.read_parquet(path)
    except Exception:  # a missing or damaged cache file is rebuilt, whatever polars raises
        return None
    if index.schema != pl.Schema({"hash": pl.UInt64, "known": pl.String}) or index["known"].null_count():
        return None
    if (rows is not None and index.height != rows) or not index["hash"].is_sorted():
        return None
    return index.with_columns(pl.col("hash").set_sorted())


#: Any whitespace but a lone space between fields: such a block takes the general pattern.
_IRREGULAR_SPACE = r"\s\s|^\s|\s$|[^\S ]"


def _split_plain_lines(lines: pl.DataFrame, columns: list[str]) -> pl.DataFrame | None:
    """The fields of every line when each has exactly ``len(columns)`` fields, one space apart
    and no other whitespace (as run files are written); otherwise ``None``.

    For such lines a split on the space gives exactly the groups of :data:`_RUN_LINES`'
    pattern, in a third of its time (a 375,000-line run: 0.33 s against 1.08 s, side by side);
    any other block, and every bad line's message, is left to the pattern.
    """
    text = pl.col("text")
    irregular = lines.select(
        (text.str.count_matches(" ", literal=True) != len(columns) - 1).any()
        | text.str.contains(_IRREGULAR_SPACE).any()
    ).item()
    if irregular:
        return None
    return lines.select(
        "line", text.str.split_exact(" ", len(columns) - 1).struct.rename_fields(columns).alias("f")
    ).unnest("f")


def _parse_run_block(
    path: Path, lines: pl.DataFrame, known: KnownDocids | None, skipped: Skipped | None, run_format: str = "trec"
) -> pl.DataFrame:
    """Validate one block of run lines; keep ``line, qid, docid, score`` (the text is dropped).

    Ranks must be integers of 0 or more and scores finite numbers (trec_eval reads them with ``atoi``
    and ``atof``, which would silently turn ``1.5`` into 1 and ``inf`` into a score).
    """
    pattern, columns = _RUN_LINES[run_format]
    lines = lines.filter(pl.col("text").str.strip_chars() != "")
    fields = _split_plain_lines(lines, columns)
    if fields is None:
        fields = lines.select("line", pl.col("text").str.extract_groups(pattern).alias("f")).unnest("f")
        fields.columns = ["line", *columns]
    bad = fields.filter(pl.col("qid").is_null())
    for (line,) in bad.select("line").iter_rows():
        found = len(lines.filter(pl.col("line") == line)["text"][0].split())
        raise_or_skip(InputError(path, line, f"expected {_RUN_EXPECTED[run_format]}, found {found}"), skipped)
    fields = fields.filter(pl.col("qid").is_not_null())

    rank_value = pl.col("rank").cast(pl.Int64, strict=False)
    bad = fields.filter(rank_value.is_null())
    for line, rank in bad.select("line", "rank").iter_rows():
        raise_or_skip(InputError(path, line, f"rank {rank!r} is not an integer"), skipped)
    if len(bad):
        fields = fields.filter(rank_value.is_not_null())
    negative = fields.filter(rank_value < 0)  # a rank counts from 0 or 1, never below (issue 68)
    for line, rank in negative.select("line", "rank").iter_rows():
        raise_or_skip(InputError(path, line, f"rank {rank!r} is negative"), skipped)
    if len(negative):
        fields = fields.filter(rank_value >= 0)

    if run_format == "msmarco":
        fields = fields.with_columns((-rank_value).cast(pl.Float64).alias("score_value"))
    else:
        fields = fields.with_columns(pl.col("score").cast(pl.Float64, strict=False).alias("score_value"))
        unusable = pl.col("score_value").is_null() | ~pl.col("score_value").is_finite()
        bad = fields.filter(unusable)
        for line, score, value in bad.select("line", "score", "score_value").iter_rows():
            problem = "is not a number" if value is None or value != value else "is not finite"
            raise_or_skip(InputError(path, line, f"score {score!r} {problem}"), skipped)
        if len(bad):
            fields = fields.filter(~unusable)
    fields = fields.select("line", "qid", "docid", pl.col("score_value").alias("score"))
    return _keep_known(path, fields, known, skipped)


def read_run(
    path: str | Path,
    order: str = "score",
    known_docids: pl.Series | KnownDocids | None = None,
    skipped: Skipped | None = None,
    run_format: str = "auto",
) -> RunTable:
    """Read a TREC run (``qid Q0 docid rank score tag``) or an MS MARCO run (``qid docid
    rank``), any whitespace; ``run_format`` is one of :data:`RUN_FORMATS`.

    A query's lines may be interleaved with other queries' (trec_eval accepts this):
    they are gathered at the query's first appearance, keeping their file order.
    ``order="score"`` ranks by score descending, ties by docid descending (trec_eval's
    rule); ``order="file"`` keeps the file's order, as the reference notebooks did.
    ``reordered_ties`` counts the queries whose order the tie rule changed relative to
    a stable sort of the file by score.

    Two steps, which workers may split (:func:`parse_run_lines` on byte ranges, then one
    :func:`finish_run` over the ranges' lines in file order): this is both in one process.
    """
    path, run_format = check_run_file(path, order, run_format)
    fields = parse_run_lines(path, run_format, known_docids, skipped)
    return finish_run(path, fields, order, skipped, run_format)


def check_run_file(path: str | Path, order: str, run_format: str) -> tuple[Path, str]:
    """The run's path and its format (``auto`` detected), after checking the options and the file."""
    if order not in RUN_ORDERS:
        raise ValueError(f"order must be one of {RUN_ORDERS}, got {order!r}")
    if run_format not in RUN_FORMATS:
        raise ValueError(f"run_format must be one of {RUN_FORMATS}, got {run_format!r}")
    path = Path(path)
    if not path.is_file():
        raise InputError(path, None, "no such file")
    if run_format == "auto":
        run_format = detect_run_format(path)
    return path, run_format


def parse_run_lines(
    path: Path,
    run_format: str,
    known_docids: pl.Series | KnownDocids | None = None,
    skipped: Skipped | None = None,
    byte_range: tuple[int, int] | None = None,
    first_line: int = 1,
) -> pl.DataFrame:
    """Validated lines of a run (or of one ``byte_range`` of it, whose first line is the
    file's line ``first_line``): ``line, qid, docid, score``, in file order."""
    known = KnownDocids(known_docids) if isinstance(known_docids, pl.Series) else known_docids
    if byte_range is None:
        regular = read_regular_run(path, run_format)
        if regular is not None:
            return _keep_known(path, regular, known, skipped)
    blocks = iter_blocks(path, byte_range=byte_range, first_line=first_line)
    parts = [_parse_run_block(path, lines, known, skipped, run_format) for lines, _ in blocks]
    return pl.concat(parts) if parts else pl.DataFrame(schema=RUN_FIELDS)


#: ASCII whitespace other than the space, the newline and the carriage return (refused apart).
_ASCII_TABS = (b"\t", b"\x0b", b"\x0c")
#: The columns a run's fields are read as by the columnar reader (:func:`read_regular_run`).
_REGULAR_TYPES = {"qid": pl.String, "q0": pl.String, "docid": pl.String, "rank": pl.Int64, "score": pl.Float64}


def read_regular_run(path: Path, run_format: str) -> pl.DataFrame | None:
    """``line, qid, docid, score`` of a plain run file whose every line is regular, read by
    polars' CSV reader (columnar, on every core); ``None`` when any line is not, or the file
    is gzipped: then :func:`parse_run_lines` reads it block by block, naming each bad line.

    Regular, as run files are written: exactly the format's fields, one space apart, no other
    whitespace anywhere (no blank line, no tab, no carriage return, none at either end), UTF-8
    without a byte-order mark, integer ranks and finite scores, every line under
    :data:`MAX_LINE_BYTES`. What it gives is then exactly what the block parser gives for the
    same file (``tests/pooling/test_run_reader_paths.py`` compares the two): 3.5 times faster
    in CPU on 7M lines, and no line is ever accepted here that the block parser would refuse.
    """
    columns = _RUN_LINES[run_format][1]
    with open(path, "rb") as file:
        head = file.read(3)
        if head[:2] == GZIP_MAGIC or head == UTF8_BOM or not head:
            return None
        size = path.stat().st_size
        if size > DECOMPRESSED.bytes:
            return None  # the block parser refuses it, naming the line reached
        file.seek(0)
        newlines, last, ascii_spaces_only = 0, b"", True
        while block := file.read(BLOCK_SIZE):
            if b"\r" in block:  # the CSV reader takes CR LF for a line end
                return None
            newlines += block.count(b"\n")
            last = block[-1:]
            # ASCII with no tab, vertical tab or form feed: no whitespace but the space and the
            # newline, so no field needs the (slower) whitespace pattern below.
            ascii_spaces_only = ascii_spaces_only and block.isascii() and not any(c in block for c in _ASCII_TABS)
    lines = newlines + (last != b"\n")
    schema = {name: _REGULAR_TYPES.get(name, pl.String) for name in columns}
    try:
        frame = pl.read_csv(
            path,
            has_header=False,
            separator=" ",
            quote_char=None,
            schema=schema,
            encoding="utf8",
            raise_if_empty=False,
        )
    except (pl.exceptions.PolarsError, UnicodeDecodeError, ValueError):
        return None
    if frame.height != lines:  # a blank line, skipped by the reader
        return None
    strings = [name for name, kind in schema.items() if kind == pl.String]
    whitespace = (
        pl.lit(False) if ascii_spaces_only else pl.any_horizontal(pl.col(name).str.contains(r"\s") for name in strings)
    )
    length = pl.sum_horizontal(pl.col(name).str.len_bytes() for name in strings) + 2 * len(columns) + 40
    irregular = pl.any_horizontal(pl.all().is_null()) | whitespace | (length > MAX_LINE_BYTES)
    if "score" in schema:
        irregular = irregular | ~pl.col("score").is_finite()
    irregular = irregular | (pl.col("rank") < 0)  # the block parser names the line
    if frame.select(irregular.any()).item():
        return None
    score = pl.col("score") if run_format != "msmarco" else (-pl.col("rank")).cast(pl.Float64).alias("score")
    return frame.select(pl.int_range(1, frame.height + 1, dtype=pl.Int64).alias("line"), "qid", "docid", score)


def _keep_known(path: Path, fields: pl.DataFrame, known: KnownDocids | None, skipped: Skipped | None) -> pl.DataFrame:
    """``fields`` without the lines whose docid the collection does not hold, each an error (or
    skipped and reported, with ``skipped``)."""
    if known is None:
        return fields
    held = pl.Series(known.contains(fields["docid"]))
    unknown = fields.filter(~held).sort("line")
    for line, docid in unknown.select("line", "docid").iter_rows():
        raise_or_skip(InputError(path, line, f"docid {docid!r} is not in the collection"), skipped)
    return fields.filter(held) if len(unknown) else fields


def finish_run(path: Path, fields: pl.DataFrame, order: str, skipped: Skipped | None, run_format: str) -> RunTable:
    """The run from all its validated lines in file order: repeated pairs refused, query
    blocks gathered, ties ordered, ranks given."""
    if not len(fields):
        raise InputError(path, None, "the run is empty")

    duplicate = _repeated_pairs(fields)
    for line, qid, docid in duplicate.select("line", "qid", "docid").iter_rows():
        raise_or_skip(InputError(path, line, f"docid {docid!r} appears twice for query {qid!r}"), skipped)
    if len(duplicate):
        fields = fields.join(duplicate.select("line"), on="line", how="anti", maintain_order="left")

    blocks = fields.with_columns((pl.col("qid") != pl.col("qid").shift(1)).fill_null(True).cum_sum().alias("block"))
    interleaved = 0
    if blocks["block"].max() != blocks["qid"].n_unique():  # some query's lines come in several blocks
        interleaved = int(
            blocks.group_by("qid").agg(pl.col("block").n_unique().alias("n")).filter(pl.col("n") > 1).height
        )
        # Gather each query at its first block; "line" keeps the file order within it.
        blocks = blocks.with_columns(pl.col("block").min().over("qid")).sort("block", "line")

    # Within a block, "line" is the file order: sorts on (block, score, line) keep it for ties.
    frame = blocks.select("qid", "docid", "score", "block", "line")
    stable, trec = _score_orders(frame)
    changed = stable != trec
    reordered_rows = int(changed.sum())
    reordered_ties = int(np.unique(frame["block"].to_numpy()[trec[changed]]).size)
    chosen = frame[trec] if order == "score" else frame
    out = chosen.select("qid", "docid", pl.Series("rank", _ranks(chosen["block"].to_numpy())), "score")
    return RunTable(out, reordered_ties, reordered_rows, interleaved, run_format)

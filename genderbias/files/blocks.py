"""Files read in large binary blocks, each parsed by polars into a frame of its lines: the one block reader of
collections and runs (:func:`iter_blocks`). Gzip is detected by content; line numbers count every line, blank
ones too, so an error names its line exactly.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np
import polars as pl

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

__all__ = ["BLOCK_SIZE", "UTF8_BOM", "byte_ranges", "is_gzipped", "iter_blocks", "line_numbers_at"]

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
    """At most ``chunks`` byte ranges ``[start, end)`` beginning at line starts, so every line falls in exactly one;
    a gzipped file cannot be entered in the middle and is one range."""
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
    """Yield ``(lines, bytes_read)`` for blocks of whole lines of a (possibly gzipped) file, in about two blocks
    of memory.

    ``lines``: a frame ``line: int64, text: str`` with file-wide line numbers (``offsets``: and ``offset``, where
    each line starts in the uncompressed stream); ``bytes_read``: the compressed position, for progress bars. A
    hashlib ``digest`` is fed the raw bytes on the way. ``byte_range`` (:func:`byte_ranges`, plain files only)
    reads just that range, numbered from ``first_line`` (:func:`line_numbers_at`). Long lines and files past
    :data:`genderbias.files.textfiles.DECOMPRESSED` are refused as :mod:`genderbias.files.textfiles` refuses them.
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
        # A plain file's blocks are hashed on a second thread (hashlib lets go of the GIL) beside the parsing of
        # the block before; a gzipped file's compressed bytes as they are read.
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
            end = chunk.rfind(b"\n") + 1  # the chunk's whole lines end here
            if end:  # the line carried over and the chunk's whole lines, in one copy at most
                block = b"".join((rest, memoryview(chunk)[:end])) if rest or end < len(chunk) else chunk
                rest = chunk[end:]
            else:
                block, rest = b"", rest + chunk
            if block:
                check_line_lengths(path, block, line)
                blanks.check(block, line)
                frame = lines_frame(path, block, line, block_start if offsets else None)
                yield frame, raw.position
                line += frame.height  # the block's lines, each ended by a newline (blank ones too)
                block_start += len(block)
            if len(rest) > MAX_LINE_BYTES:  # never gather an endless line (a gzip bomb of NULs)
                raise line_too_long(path, line)
        if rest:
            yield lines_frame(path, rest, line, block_start if offsets else None), raw.position
        if hasher:
            hasher.finish()


class _BlockHasher:
    """Feeds a hashlib digest block after block on one other thread, in order, at most one block waiting."""

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
    """Bytes of whole lines as a frame ``line: int64, text: str`` (endings dropped, UTF-8 validated in Rust, the
    bad line named on failure); given ``start`` (where ``data`` begins), also ``offset``: where each text begins."""
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

"""Opening input files: gzip detected by content, strict UTF-8, lines counted as people count them.

Invariant: every reader opens files through here, so a gzipped file works wherever a plain one does and a
decoding error names the file and line. Reading is bounded: files are decompressed as a stream, no line may
exceed :data:`MAX_LINE_BYTES` (a small ``.gz`` of one endless line is refused after about a megabyte), and the
expanded size is bounded (:class:`InputLimit`): :data:`HELD` for readers that keep their lines, :data:`DECOMPRESSED`
for streaming ones, both refused by :func:`too_large`. Standard library only, so light enough for commands
reading a ten-line file; the site sets the limits from its settings (:func:`configure_limits`).
"""

from __future__ import annotations

import errno
import io
import os
import re
import stat
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from genderbias.errors import InputError

__all__ = [
    "DECOMPRESSED", "EXPANSION", "GZIP_MAGIC", "HELD", "HELD_LINE_BYTES", "MAX_BLANK_LINES", "MAX_LINE_BYTES",
    "BlankRun", "GunzipStream", "InputLimit", "SizeCounter", "bounded_line", "check_line_lengths", "configure_limits",
    "csv_records", "decode_utf8", "expanded", "line_too_long", "open_regular", "open_text", "safe_basename",
]  # fmt: skip

GZIP_MAGIC = b"\x1f\x8b"
#: The longest line any reader accepts, in bytes without its line ending. Generous (the
#: longest MS MARCO passage is a few kilobytes): a longer line means the file is not lines
#: of text, and holding it to find its end is what a decompression bomb relies on.
MAX_LINE_BYTES = 1024 * 1024
#: How much :func:`open_text` decompresses at a time.
READ_SIZE = 1024 * 1024
#: How many compressed bytes the gzip reader (:class:`GunzipStream`) takes from the file at a time,
#: and the most it expands at once: decompression proceeds in blocks of fixed size, never whole.
GZIP_BLOCK = 64 * 1024
#: The most blank lines in a row any reader accepts: a file of newlines (a megabyte of them
#: gzipped is a gigabyte, a billion lines) is refused at its start instead of being read
#: line by line for minutes.
MAX_BLANK_LINES = 10_000


@dataclass
class InputLimit:
    """The most bytes a reader takes from one file once decompressed (a plain file: its size)."""

    bytes: int
    #: The setting that changes it, named in the error.
    setting: str
    #: Which files it bounds, named in the error.
    files: str
    #: Bytes counted for each line besides its own: what a line costs once a reader holds it.
    per_line: int = 0


#: Files a reader streams, holding a block at a time or columns (collections, runs).
DECOMPRESSED = InputLimit(32 * 1024**3, "IMPORT_MAX_DECOMPRESSED_BYTES", "collections and runs")
#: Files a reader keeps line by line in memory (queries, qrels, word lists, gold, training, labelled):
#: a line becomes Python objects of a few hundred bytes beyond its own (measured: docs/deployment.md,
#: "Input limits"), so it counts its bytes and :data:`HELD_LINE_BYTES`: the limit bounds what is held.
HELD_LINE_BYTES = 384
HELD = InputLimit(512 * 1024**2, "IMPORT_MAX_HELD_BYTES", "query, qrels, word-list and labelled files (read whole into memory)", HELD_LINE_BYTES)  # fmt: skip


@dataclass
class ExpansionLimit:
    """How far a gzip file may expand relative to its compressed bytes. Text compresses three to ten times; a file
    expanding a hundred times is a compression bomb. Checked while decompressing past the first ``free`` bytes (a
    small file is never refused for its ratio), so a bomb is refused after a few megabytes.
    """

    ratio: int
    free: int
    setting: str = "IMPORT_MAX_EXPANSION_RATIO"


EXPANSION = ExpansionLimit(100, 4 * 1024**2)


def configure_limits(
    *,
    decompressed: int | None = None,
    held: int | None = None,
    ratio: int | None = None,
    ratio_free: int | None = None,
) -> None:
    """Set the limits (the site calls this with its settings, and again when tests change them)."""
    if decompressed is not None:
        DECOMPRESSED.bytes = decompressed
    if held is not None:
        HELD.bytes = held
    if ratio is not None:
        EXPANSION.ratio = ratio
    if ratio_free is not None:
        EXPANSION.free = ratio_free


def too_large(path: str | Path, line: int, limit: InputLimit) -> InputError:
    """The one error for a file past its :class:`InputLimit`: ``path:line: problem``, ``line``
    being the line the reader had reached."""
    held = f" once read (each line's bytes and {limit.per_line} for the objects it becomes)"
    size = f"{'holds' if limit.per_line else 'expands to'} more than {limit.bytes:,} bytes{held * bool(limit.per_line)}"
    return InputError(path, line, f"the file {size}, the limit for {limit.files} (setting {limit.setting}); reading stopped here")  # fmt: skip


#: UTF-8 lead bytes of characters past U+FFFF and U+00FF: the bytes a character of a line holding one costs.
_WIDE = ((re.compile(rb"[\xf0-\xf4]"), 4), (re.compile(rb"[\xc4-\xef]"), 2))


class SizeCounter:
    """Counts the (decompressed) bytes a reader takes and refuses the file past ``limit``."""

    def __init__(self, path: str | Path, limit: InputLimit, start: int = 0) -> None:
        self.path, self.limit, self.read = path, limit, start

    def add(self, data: bytes, first_line: int) -> None:
        """Count ``data`` (read next, from line ``first_line``); a held limit counts each line break with
        ``per_line``, and a block's bytes 2 or 4 times if it has a character past U+00FF or U+FFFF (Python
        stores such a line 2 or 4 bytes a character). Over the limit, name the line whose count crosses it."""
        before, per_line = self.read, self.limit.per_line
        width = next((w for lead, w in _WIDE if per_line and lead.search(data)), 1)
        self.read += width * len(data) + (per_line * data.count(b"\n") if per_line else 0)
        if self.read > self.limit.bytes:
            line, start = first_line, 0
            while (end := data.find(b"\n", start)) >= 0:
                before += width * (end + 1 - start) + per_line
                if before > self.limit.bytes:
                    break
                line, start = line + 1, end + 1
            raise too_large(self.path, line, self.limit)


_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def safe_basename(name: str | None, default: str = "upload") -> str:
    """The last component of a client-given file name, reduced to letters, digits, ``._-``,
    without leading dots (never ``.``, ``..`` or a hidden file) and at most 120 characters:
    a name that can only ever be a plain file inside the folder it is joined to."""
    base = _UNSAFE_NAME.sub("_", (name or "").replace("\\", "/").rsplit("/", 1)[-1]).lstrip(".")
    return base[-120:].lstrip(".") or default


def too_compressed(path: str | Path, line: int, limit: ExpansionLimit) -> InputError:
    """The one error for a gzip file past its :class:`ExpansionLimit`, naming the line reached."""
    return InputError(
        path,
        line,
        f"the gzip file expands more than {limit.ratio} times its compressed size past its first "
        f"{limit.free:,} bytes (setting {limit.setting}): a compression bomb or lines repeated "
        "over and over, not a file to import; reading stopped here",
    )


class GunzipStream(io.RawIOBase):
    """The expanded bytes of a gzip file, the project's one gzip reader: each ``read`` takes at most
    :data:`GZIP_BLOCK` compressed bytes and expands at most what was asked, so memory is the caller's buffer.
    Refuses the file past :data:`EXPANSION` (:func:`too_compressed`); concatenated members are read in turn (as
    ``gzip`` does); a truncated or corrupt stream is an :class:`InputError`.
    """

    def __init__(self, path: str | Path, raw: BinaryIO, limit: ExpansionLimit | None = None) -> None:
        self.path, self.raw, self.limit = path, raw, limit or EXPANSION
        self.taken = self.given = self.newlines = 0
        self._inflate = zlib.decompressobj(zlib.MAX_WBITS | 16)
        self._input = b""
        self._started = False  # a member's first byte was taken (then its end must come)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self._expand(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def _take(self) -> bytes:
        data = self.raw.read(GZIP_BLOCK)
        self.taken += len(data)
        return data

    def _expand(self, size: int) -> bytes:
        while size > 0:
            if self._inflate.eof:  # a member ended: another may follow (zero padding is ignored)
                rest = self._inflate.unused_data.lstrip(b"\0")
                while not rest and (more := self._take()):
                    rest = more.lstrip(b"\0")
                if not rest:
                    return b""
                self._inflate, self._input = zlib.decompressobj(zlib.MAX_WBITS | 16), rest
            if not self._input:
                self._input = self._take()
                if not self._input:
                    if self._started:
                        raise InputError(self.path, None, "the gzip file is truncated (it ends before its last block)")
                    return b""
            self._started = True
            try:
                data = self._inflate.decompress(self._input, min(size, GZIP_BLOCK))
            except zlib.error as exc:
                raise InputError(self.path, None, f"the gzip file is corrupt ({exc})") from None
            self._input = self._inflate.unconsumed_tail
            if self._inflate.eof:
                self._started = False
            if data:
                self._count(data)
                return data
        return b""

    def _count(self, data: bytes) -> None:
        line = self.newlines + 1
        self.given += len(data)
        self.newlines += data.count(b"\n")
        if self.given > self.limit.free and self.given > self.limit.ratio * max(self.taken, 1):
            raise too_compressed(self.path, line, self.limit)


def expanded(path: str | Path, raw: BinaryIO) -> BinaryIO:
    """``raw`` (positioned at the file's start) as its expanded bytes: through :class:`GunzipStream`
    when it begins with the gzip magic, else itself. Buffered, so callers read any size."""
    start = raw.read(2)
    raw.seek(-len(start), io.SEEK_CUR)
    if start != GZIP_MAGIC:
        return raw
    return io.BufferedReader(GunzipStream(path, raw), buffer_size=GZIP_BLOCK)  # type: ignore[return-value]


@contextmanager
def open_binary(path: str | Path) -> Iterator[BinaryIO]:
    """Open a file for reading bytes, transparently un-gzipping it (:func:`expanded`)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, None, "no such file")
    with open(path, "rb") as raw:
        yield expanded(path, raw)


def open_regular(path: str | Path) -> BinaryIO:
    """``path`` opened for reading bytes if it is a regular file with one name (checked on the open file, so a link
    swapped in after a listing is refused, never followed, and a FIFO never waited on)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as exc:
        problem = "a symbolic link (not followed)" if exc.errno == errno.ELOOP else f"cannot be opened ({exc.strerror})"
        raise InputError(path, None, problem) from None
    file = os.fdopen(descriptor, "rb")
    status = os.fstat(descriptor)
    if stat.S_ISREG(status.st_mode) and status.st_nlink == 1:
        return file
    file.close()  # a hard link is a second name of a file that may live elsewhere
    problem = "not a regular file" if not stat.S_ISREG(status.st_mode) else f"a hard link ({status.st_nlink} names)"
    raise InputError(path, None, f"{problem}: only regular files with one name are read")


class BlankRun:
    """Counts blank lines in a row across a reader's blocks, refusing more than :data:`MAX_BLANK_LINES`."""

    def __init__(self, path: str | Path) -> None:
        self.path, self.carried = path, 0  # blank lines at the end of the blocks so far

    def check(self, data: bytes, first_line: int) -> None:
        """``data``: whole lines (lines ``first_line``… of the file)."""
        for ending in (b"\n", b"\r\n"):
            found = data.find(ending * (MAX_BLANK_LINES + 2))  # a line's end, then more than the limit
            if found >= 0:
                raise too_many_blank_lines(self.path, first_line + data.count(b"\n", 0, found + 1))
        stripped = data.lstrip(b"\r\n")
        leading = data.count(b"\n", 0, len(data) - len(stripped))
        if self.carried + leading > MAX_BLANK_LINES:
            raise too_many_blank_lines(self.path, first_line)
        trailing = data.count(b"\n", _end_of_text(data))
        self.carried = self.carried + leading if not stripped else max(trailing - 1, 0)


def _end_of_text(data: bytes) -> int:
    """``len(data.rstrip(b"\\r\\n"))`` without copying ``data``: its tail stripped, a wider one while all
    of it is line breaks (a block ends with one, and copying a 16 MB block for it was a copy too many)."""
    window = 64
    while True:
        tail = data[-window:]
        kept = tail.rstrip(b"\r\n")
        if kept or window >= len(data):
            return len(data) - len(tail) + len(kept)
        window *= 8


def too_many_blank_lines(path: str | Path, line: int) -> InputError:
    """The one error for a file of blank lines (:data:`MAX_BLANK_LINES`), naming where they begin."""
    return InputError(
        path,
        line,
        f"more than {MAX_BLANK_LINES:,} blank lines in a row (the limit of every reader): not a file of text lines",
    )


def decode_utf8(path: Path, data: bytes, first_line: int) -> str:
    """Decode strict UTF-8, turning a decoding error into the line that holds it."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + data.count(b"\n", 0, exc.start)
        raise InputError(path, line, f"invalid UTF-8 (byte 0x{data[exc.start]:02x})") from None


def split_lines(text: str) -> list[str]:
    """Lines as the other readers count them: split on ``\\n`` only (``str.splitlines`` also splits on U+2028 and
    U+0085, which occur inside real queries), a trailing ``\\r`` dropped."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def line_too_long(path: str | Path, line: int | None, where: str = "") -> InputError:
    """The one error for a line over :data:`MAX_LINE_BYTES`: ``path:line: problem``, as every bad input is
    named; a reader that seeks to a byte offset (:mod:`.docstores`) knows no line and names ``where``."""
    problem = f"the line is longer than {MAX_LINE_BYTES:,} bytes (the limit of every reader): this is not a file of"
    return InputError(path, line, f"{where}{': ' if where else ''}{problem} text lines, or its line breaks are missing")


def bounded_line(file: BinaryIO, path: str | Path, where: str) -> bytes:
    """The next line of ``file`` (its ending kept), read at most :data:`MAX_LINE_BYTES` and its line
    break: a longer one is refused (:func:`line_too_long` naming ``where``), as :func:`open_text` does."""
    line = file.readline(MAX_LINE_BYTES + 1)
    if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
        raise line_too_long(path, None, where)
    return line


@contextmanager
def open_text(path: str | Path, limit: InputLimit | None = None) -> Iterator[Iterator[str]]:
    """Lines of a text file, decoded strictly as UTF-8, without line endings, streamed a megabyte at a time.

    ``limit``: default :data:`HELD` (callers keep the lines). Over-long lines and files past the limit are refused
    as soon as the bytes that show it pass (:func:`line_too_long`, :func:`too_large`).
    """
    path = Path(path)
    with open_binary(path) as stream:
        yield _text_lines(path, stream, SizeCounter(path, limit or HELD))


def _text_lines(path: Path, stream: BinaryIO, counter: SizeCounter) -> Iterator[str]:
    number, rest = 1, b""  # ``number``: the file's number of the first line in ``rest``
    blanks = BlankRun(path)
    while chunk := stream.read(READ_SIZE):
        counter.add(chunk, number)
        data = rest + chunk
        cut = data.rfind(b"\n") + 1
        block, rest = data[:cut], data[cut:]
        if block:
            blanks.check(block, number)
            lines = _decoded_lines(path, block, number)
            number += len(lines)
            yield from lines
        if len(rest) > MAX_LINE_BYTES:
            raise line_too_long(path, number)
    if rest:
        yield from _decoded_lines(path, rest, number)


def _decoded_lines(path: Path, data: bytes, first_line: int) -> list[str]:
    """Whole lines of ``data`` (lines ``first_line``… of the file), length-checked and decoded."""
    check_line_lengths(path, data, first_line)
    text = decode_utf8(path, data, first_line)
    if first_line == 1:
        text = text.removeprefix("\ufeff")
    return split_lines(text)


def check_line_lengths(path: str | Path, data: bytes, first_line: int) -> None:
    """Refuse ``data`` (lines ``first_line``… of the file) if a line is over :data:`MAX_LINE_BYTES` (a ``\r`` before
    its ``\n`` counted); a few short backward searches per block of normal lines, not a pass over its bytes."""
    start, size = 0, len(data)
    while size - start > MAX_LINE_BYTES:
        end = data.rfind(b"\n", start, start + MAX_LINE_BYTES + 1)
        if end < 0:
            raise line_too_long(path, first_line + data.count(b"\n", 0, start))
        start = end + 1


#: The most physical lines one CSV record (a quoted field holding line breaks) may span.
MAX_RECORD_LINES = 1000


def _quote_open(text: str, delimiter: str) -> bool:
    """Whether ``text`` ends inside a quoted field (RFC 4180: the field goes on after the line break)."""
    import csv

    try:
        next(csv.reader([text], delimiter=delimiter, strict=True), None)
    except csv.Error as exc:
        return "unexpected end of data" in str(exc)
    return False


def csv_records(path: Path, lines: Iterable[str], *, delimiter: str = ",") -> Iterator[tuple[int, str]]:
    """``(number of its first line, record)`` per record of a CSV file read as ``lines`` (as :func:`open_text` gives
    them): a quoted field may hold line breaks (RFC 4180), joined with ``\\n``. A quote not closed within
    :data:`MAX_RECORD_LINES` lines, :data:`MAX_LINE_BYTES` or the file is refused naming the record's first line."""
    pending: list[str] = []
    start = size = 0
    for number, line in enumerate(lines, start=1):
        if not pending:
            if '"' not in line or not _quote_open(line, delimiter):
                yield number, line
                continue
            pending, start, size = [line], number, len(line)
            continue
        pending.append(line)
        size += len(line) + 1
        text = "\n".join(pending)
        if not _quote_open(text, delimiter):
            yield start, text
            pending = []
        elif len(pending) >= MAX_RECORD_LINES or size > MAX_LINE_BYTES:
            raise InputError(
                path, start, f"a quoted field opened on this line is not closed within {len(pending)} lines"
            )
    if pending:
        raise InputError(path, start, 'a quoted field opened on this line is never closed (a missing ")')

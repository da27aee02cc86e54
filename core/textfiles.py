"""Opening input files: gzip detected by content, strict UTF-8, lines counted as people count them.

Invariant: every reader of the project opens files through here, so a gzipped file works
wherever a plain one does, and a decoding error always names the file and the line that
holds the bad byte. Pure module (no Django), standard library only: light enough for
commands that read a ten-line file.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from .errors import InputError

GZIP_MAGIC = b"\x1f\x8b"


@contextmanager
def open_binary(path: str | Path) -> Iterator[BinaryIO]:
    """Open a file for reading bytes, transparently un-gzipping it."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, None, "no such file")
    with open(path, "rb") as raw:
        gzipped = raw.read(2) == GZIP_MAGIC
        raw.seek(0)
        if gzipped:
            with gzip_errors(path), gzip.GzipFile(fileobj=raw) as unzipped:
                yield unzipped  # type: ignore[misc]
        else:
            yield raw


@contextmanager
def gzip_errors(path: str | Path) -> Iterator[None]:
    """A truncated or corrupt gzip stream read inside the block becomes ``path: problem``, not a traceback."""
    try:
        yield
    except EOFError:
        raise InputError(path, None, "the gzip file is truncated (it ends before its last block)") from None
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise InputError(path, None, f"the gzip file is corrupt ({exc})") from None


def decode_utf8(path: Path, data: bytes, first_line: int) -> str:
    """Decode strict UTF-8, turning a decoding error into the line that holds it."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = first_line + data.count(b"\n", 0, exc.start)
        raise InputError(path, line, f"invalid UTF-8 (byte 0x{data[exc.start]:02x})") from None


def split_lines(text: str) -> list[str]:
    """Lines as the other readers count them: split on ``\\n`` only (``str.splitlines`` also
    splits on U+2028, U+0085 and other characters that occur inside real queries), with a
    trailing ``\\r`` dropped."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


@contextmanager
def open_text(path: str | Path) -> Iterator[Iterator[str]]:
    """Lines of a small text file, decoded strictly as UTF-8, without line endings."""
    path = Path(path)
    with open_binary(path) as stream:
        data = stream.read()
    text = decode_utf8(path, data, 1).removeprefix("\ufeff")
    yield iter(split_lines(text))

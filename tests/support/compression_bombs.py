"""Compression bombs: a gzipped file that expands to gigabytes, written without holding it whole.

The bounded-input tests (tests/pooling/test_bounded_input.py) import them, and so does the upload
memory benchmark (``manage.py benchmark_uploads``).
"""

from __future__ import annotations

import gzip
from pathlib import Path


def write_repeated(path: Path, line: bytes, total: int, head: bytes = b"") -> Path:
    """``head`` then ``line`` repeated to ``total`` bytes, gzipped (level 9) in 16 MiB pieces."""
    piece = line * (16 * 1024 * 1024 // len(line))
    with gzip.open(path, "wb", compresslevel=9) as out:
        out.write(head)
        written = len(head)
        while written < total:
            out.write(piece[: total - written])
            written += len(piece)
    return path

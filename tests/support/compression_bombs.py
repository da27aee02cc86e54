"""Compression bombs: a gzipped file that expands to gigabytes, written without holding it whole.

The bounded-input tests (tests/pooling/test_bounded_input.py) import them, and so does the upload
memory benchmark (``manage.py benchmark_uploads``).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

#: The repeated piece, compressed once: a full flush after it resets the compressor, so every whole
#: piece after it compresses to the same bytes, written again instead of compressed again.
PIECE_BYTES = 16 * 1024 * 1024


def write_repeated(path: Path, line: bytes, total: int, head: bytes = b"") -> Path:
    """``head`` then ``line`` repeated to ``total`` bytes, as one gzip member (RFC 1952) at level 9."""
    piece = line * (PIECE_BYTES // len(line))
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    crc, written, compressed = zlib.crc32(head), len(head), {}
    with open(path, "wb") as out:
        out.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff")  # deflate, no name, no time, best, any OS
        out.write(deflate.compress(head) + deflate.flush(zlib.Z_FULL_FLUSH))
        while written < total:
            chunk = piece[: total - written]
            if len(chunk) not in compressed:
                compressed[len(chunk)] = deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH)
            out.write(compressed[len(chunk)])
            crc = zlib.crc32(chunk, crc)
            written += len(chunk)
        out.write(deflate.flush(zlib.Z_FINISH) + struct.pack("<II", crc, written & 0xFFFFFFFF))
    return path

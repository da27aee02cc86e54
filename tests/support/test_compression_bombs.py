"""The bombs are gzip files Python's own reader expands to exactly the bytes asked for, CRC and size checked."""

import gzip

import pytest

from tests.support import compression_bombs


@pytest.mark.parametrize(("head", "line", "total"), [(b"", b"\0", 4096), (b"\n\n", b"word ", 5000), (b"x", b"ab\n", 3)])
def test_a_bomb_expands_to_head_then_the_line_repeated(monkeypatch, tmp_path, head, line, total):
    monkeypatch.setattr(compression_bombs, "PIECE_BYTES", 1024)  # several whole pieces, then a part of one
    path = compression_bombs.write_repeated(tmp_path / "bomb.gz", line, total, head)
    piece = line * (1024 // len(line))
    expected = head
    while len(expected) < total:
        expected += piece[: total - len(expected)]
    assert gzip.decompress(path.read_bytes()) == expected

"""A regular run file is read by polars' CSV reader; anything else by the block parser, as before.

The columnar path (``runs.read_regular_run``) must give exactly what the block parser gives,
and must never accept a line the block parser refuses: every file here is read both ways (the
block parser forced by giving the whole file as a byte range), and the regular ones are also
compared with an independent reading in this test (``str.split`` and ``float``).
"""

import gzip
import math
import random
from pathlib import Path

import polars as pl
import pytest

from genderbias.errors import InputError, Skipped
from genderbias.files import known_docids, runs


def _trec(rng: random.Random, n: int) -> list[str]:
    lines = []
    for i in range(n):
        score = rng.choice([f"{rng.uniform(-50, 50):.6f}", str(rng.randrange(-9, 9)), f"{rng.random():.3e}"])
        lines.append(
            f"{rng.randrange(1, 60):03d} Q0 D{rng.randrange(10**6)} {rng.randrange(1, 1000)} {score} run-{i % 3}"
        )
    return lines


def _both(path: Path, run_format: str, known=None) -> tuple[pl.DataFrame | str, pl.DataFrame | str]:
    """The block parser's result and the default reading's (a frame, or the error's message)."""
    results = []
    for byte_range in ((0, path.stat().st_size), None):
        try:
            results.append(runs.parse_run_lines(path, run_format, known, byte_range=byte_range))
        except InputError as error:
            results.append(str(error))
    return results[0], results[1]


def _independent(lines: list[str], run_format: str) -> list[tuple]:
    rows = []
    for number, line in enumerate(lines, 1):
        fields = line.split()
        if run_format == "trec":
            rows.append((number, fields[0], fields[2], float(fields[4])))
        else:
            rows.append((number, fields[0], fields[1], -float(int(fields[2]))))
    return rows


@pytest.mark.parametrize("seed", range(3))
def test_a_regular_file_is_read_by_the_columnar_reader_as_the_block_parser_reads_it(tmp_path, seed):
    rng = random.Random(seed)
    trec = _trec(rng, 3000)
    msmarco = [f"{rng.randrange(99)} {rng.randrange(10**6)} {rng.randrange(1, 1001)}" for _ in range(3000)]
    for name, run_format, lines, end in (("a.trec", "trec", trec, "\n"), ("b.tsv", "msmarco", msmarco, "")):
        path = tmp_path / name
        path.write_text("\n".join(lines) + end)  # the last line with and without its newline
        assert runs.read_regular_run(path, run_format) is not None  # the columnar path was taken
        blocks, default = _both(path, run_format)
        assert default.equals(blocks)
        assert default.rows() == _independent(lines, run_format)


IRREGULAR = [
    ("", "q1 Q0 d1 1 2.5 tag extra"),  # seven columns
    ("", "q1 Q0 d1 1 2.5"),  # five
    ("", "q1\tQ0 d1 1 2.5 tag"),  # a tab
    ("", "q1 Q0  d1 1 2.5 tag"),  # two spaces: six columns for the pattern
    ("", " q1 Q0 d1 1 2.5 tag"),  # leading space
    ("", "q1 Q0 d1 1 2.5 tag "),  # trailing space
    ("", "q1 Q0 d1\u00a0x 1 2.5 tag"),  # a no-break space
    ("", "q1 Q0 d1\u2003 1 2.5 tag"),  # an em space beside a space
    ("", "q1 Q0 d1\x0bx 1 2.5 tag"),  # a vertical tab
    ("", "q1 Q0 d1 1 2.5 t\x0cag"),  # a form feed
    ("", "q1 Q0 d1 1 2.5 tag\r"),  # a carriage return
    ("", ""),  # a blank line
    ("", "q1 Q0 d1 1.5 2.5 tag"),  # a rank that is no integer
    ("", "q1 Q0 d1 1 nan tag"),  # a score that is no number
    ("", "q1 Q0 d1 1 inf tag"),  # nor finite
    ("", "q1 Q0 d1 1 1e400 tag"),  # overflowing to infinity
    ("", "q1 Q0 d1 1 2,5 tag"),
    ("", 'q1 Q0 "d1 x" 1 2.5 tag'),  # a quote is a character, not CSV quoting
    ("", "q1 Q0 d1 99999999999999999999 2.5 tag"),  # a rank past int64
    ("bom", ""),  # a byte-order mark
]


@pytest.mark.parametrize(("kind", "odd_line"), IRREGULAR)
def test_any_irregular_line_sends_the_file_to_the_block_parser_with_the_same_outcome(tmp_path, kind, odd_line):
    lines = _trec(random.Random(1), 200)
    if kind == "bom":
        text = "\ufeff" + "\n".join(lines) + "\n"
    else:
        lines.insert(57, odd_line)
        text = "\n".join(lines) + "\n"
    path = tmp_path / "odd.trec"
    path.write_bytes(text.encode())
    assert runs.read_regular_run(path, "trec") is None
    blocks, default = _both(path, "trec")
    assert default.equals(blocks) if isinstance(blocks, pl.DataFrame) else default == blocks, (blocks, default)


def test_invalid_utf8_and_gzip_take_the_block_parser(tmp_path):
    lines = _trec(random.Random(2), 100)
    bad = tmp_path / "latin1.trec"
    bad.write_bytes(("\n".join(lines[:10]) + "\nq1 Q0 d\xe9 1 2.5 tag\n").encode("latin-1"))
    assert runs.read_regular_run(bad, "trec") is None
    blocks, default = _both(bad, "trec")
    assert default == blocks == f"{bad}:11: invalid UTF-8 (byte 0xe9)"
    packed = tmp_path / "run.trec.gz"
    packed.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    assert runs.read_regular_run(packed, "trec") is None
    assert runs.parse_run_lines(packed, "trec").rows() == _independent(lines, "trec")


def test_unknown_docids_are_refused_by_line_on_both_paths(tmp_path):
    lines = _trec(random.Random(3), 500)
    path = tmp_path / "run.trec"
    path.write_text("\n".join(lines) + "\n")
    held = sorted({line.split()[2] for line in lines})[::2]  # half the docids
    known = known_docids.KnownDocids(pl.Series(held))
    first_unknown = next(n for n, line in enumerate(lines, 1) if line.split()[2] not in set(held))
    blocks, default = _both(path, "trec", known)
    docid = lines[first_unknown - 1].split()[2]
    assert default == blocks == f"{path}:{first_unknown}: docid {docid!r} is not in the collection"
    skipped = Skipped()
    kept = runs.parse_run_lines(path, "trec", known, skipped)
    assert kept["line"].to_list() == [n for n, line in enumerate(lines, 1) if line.split()[2] in set(held)]
    assert all(math.isfinite(v) for v in kept["score"])

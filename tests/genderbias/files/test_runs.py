"""The run reader's two fast paths give exactly what the general ones gave.

- Lines with one space between fields (as run files are written) are split on the space
  instead of matched by the whitespace pattern: same fields, and any other block (tabs,
  runs of spaces, other whitespace, a wrong column count) still goes to the pattern.
- Docids are checked against the collection by a merge of hash-sorted frames
  (``KnownDocids``) instead of a join rebuilding a hash table of the whole collection per
  run: the same rows kept and refused, in the same order.

A regular run file is read by polars' CSV reader; anything else by the block parser, as before.

The columnar path (``runs.read_regular_run``) must give exactly what the block parser gives,
and must never accept a line the block parser refuses: every file here is read both ways (the
block parser forced by giving the whole file as a byte range), and the regular ones are also
compared with an independent reading in this test (``str.split`` and ``float``).

A run line with a negative rank is refused with its file and line, by both run readers (the
columnar one for regular files, the block parser for the rest): ``rank -1`` was imported (issue 68).
Rank 0 stays: some systems count from 0, and trec_eval orders by score, not by rank.
"""

from __future__ import annotations

import gzip
import math
import random
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from genderbias.errors import InputError, Skipped
from genderbias.files import known_docids, runs
from genderbias.files.runs import read_run


def _pattern_fields(lines: pl.DataFrame, run_format: str) -> pl.DataFrame:
    pattern, columns = runs._RUN_LINES[run_format]
    fields = lines.select("line", pl.col("text").str.extract_groups(pattern).alias("f")).unnest("f")
    fields.columns = ["line", *columns]
    return fields


def _lines(texts: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"line": range(1, len(texts) + 1), "text": texts}, schema={"line": pl.Int64, "text": pl.String})


def _trec_lines(rng: random.Random, n: int) -> list[str]:
    return [
        f"q{rng.randrange(50)} Q0 d{rng.randrange(10**6)} {rng.randrange(1, 1000)} {rng.uniform(-50, 50):.6f} run-{i % 3}"
        for i in range(n)
    ]


@pytest.mark.parametrize("seed", range(5))
def test_splitting_plain_lines_gives_the_patterns_fields(seed):
    rng = random.Random(seed)
    trec = _lines(_trec_lines(rng, 2000))
    assert runs._split_plain_lines(trec, runs._RUN_LINES["trec"][1]).equals(_pattern_fields(trec, "trec"))
    msmarco = _lines([f"{rng.randrange(99)} {rng.randrange(10**6)} {rng.randrange(1, 1001)}" for _ in range(2000)])
    assert runs._split_plain_lines(msmarco, runs._RUN_LINES["msmarco"][1]).equals(_pattern_fields(msmarco, "msmarco"))


@pytest.mark.parametrize(
    "odd_line",
    [
        "q1 Q0 d1 1 2.5 tag extra",  # seven columns
        "q1 Q0 d1 1 2.5",  # five
        "q1\tQ0 d1 1 2.5 tag",  # a tab
        "q1 Q0  d1 1 2.5 tag",  # two spaces: still six columns for the pattern
        " q1 Q0 d1 1 2.5 tag",  # leading space
        "q1 Q0 d1 1 2.5 tag ",  # trailing space
        "q1 Q0 d1\u00a0x 1 2.5 tag",  # a no-break space is whitespace to the pattern
        "q1 Q0 d1\u2003 1 2.5 tag",  # an em space beside a space
    ],
)
def test_a_block_with_any_other_whitespace_or_column_count_takes_the_pattern(odd_line):
    lines = _lines([*_trec_lines(random.Random(0), 100), odd_line])
    assert runs._split_plain_lines(lines, runs._RUN_LINES["trec"][1]) is None
    # and the reader still reads it as the pattern says (the bad ones refused by line)
    skipped = Skipped()
    fields = runs._parse_run_block(Path("run.trec"), lines, None, skipped, "trec")
    pattern = _pattern_fields(lines, "trec").filter(pl.col("qid").is_not_null())
    assert fields["line"].to_list() == [
        line for line, rank in pattern.select("line", "rank").iter_rows() if rank.lstrip("-").isdigit()
    ]


def test_a_run_file_reads_the_same_whatever_whitespace_separates_its_fields(tmp_path):
    rng = random.Random(7)
    plain = _trec_lines(rng, 3000)
    spaced = ["\t".join(line.split(" ")).replace("\tQ0\t", "  Q0   ") for line in plain]
    (tmp_path / "plain.trec").write_text("\n".join(plain) + "\n")
    (tmp_path / "spaced.trec").write_text("\n".join(spaced) + "\n")
    for order in ("score", "file"):
        a = runs.read_run(tmp_path / "plain.trec", order=order)
        b = runs.read_run(tmp_path / "spaced.trec", order=order)
        assert a.frame.equals(b.frame)
        assert (a.reordered_ties, a.interleaved_queries) == (b.reordered_ties, b.interleaved_queries)


@pytest.mark.parametrize("seed", range(5))
def test_known_docids_holds_exactly_the_collections_docids(seed):
    rng = np.random.default_rng(seed)
    collection = pl.Series([f"d{i}" for i in rng.choice(10**6, size=20_000, replace=False)], dtype=pl.String)
    collection = pl.concat([collection, collection[:50]])  # a docid listed twice still counts once
    asked = pl.Series([f"d{i}" for i in rng.integers(0, 10**6, size=30_000)] + ["", "D1", "d", "d01"], dtype=pl.String)
    expected = asked.is_in(collection.implode()).to_numpy()
    found = known_docids.KnownDocids(collection).contains(asked)
    assert found.dtype == bool and (found == expected).all()
    assert 0 < expected.sum() < len(asked)  # both kinds were asked
    assert not known_docids.KnownDocids(collection[:0]).contains(asked).any()
    assert len(known_docids.KnownDocids(collection).contains(asked[:0])) == 0


@pytest.mark.parametrize("seed", range(3))
def test_a_collection_of_plain_integer_docids_is_held_by_value_with_the_same_answers(seed):
    """MS MARCO v1's docids are the integers 0 … 8,841,822: held as a table by value, a run's docid
    is held exactly when its text is one of the collection's (``is_in`` on the strings, computed
    here), whatever sign, leading zero, digit or size it is written with."""
    rng = np.random.default_rng(seed)
    collection = pl.Series([str(i) for i in rng.choice(200_000, size=50_000, replace=False)] + ["0"], dtype=pl.String)
    odd = [*"07 +7 -7 -0 00 ٧ ７ 7.0 1e3 1_0 0x7 18446744073709551617".split(), " 7", "7 ", "", "9" * 19, "9" * 25]
    asked = pl.Series([str(i) for i in rng.integers(0, 250_000, size=30_000)] + odd + ["0", "199999"], dtype=pl.String)
    known = known_docids.KnownDocids(collection)
    found = known.contains(asked)
    assert isinstance(known._index, np.ndarray)  # the table by value, not the hash index
    assert (found == asked.is_in(collection.implode()).to_numpy()).all()
    assert 0 < found.sum() < len(asked) and not found[-len(odd) - 2 : -2].any()
    # Docids that are not all plain integers, or too sparse for a table: the hash index, the same answers.
    for docids in (pl.concat([collection, pl.Series(["07"])]), pl.Series(["1", str(10**12)])):
        hashed = known_docids.KnownDocids(docids)
        assert (hashed.contains(asked) == asked.is_in(docids.implode()).to_numpy()).all()
        assert isinstance(hashed._index, pl.DataFrame)


def test_unknown_docids_are_refused_by_line_in_file_order(tmp_path):
    lines = [f"q{i // 10} Q0 d{i} {i % 10 + 1} {100 - i % 10} r" for i in range(100)]
    lines[17] = "q1 Q0 nowhere 8 93 r"
    lines[3] = "q0 Q0 missing 4 97 r"
    (tmp_path / "run.trec").write_text("\n".join(lines) + "\n")
    known = pl.Series([f"d{i}" for i in range(100)])
    with pytest.raises(InputError) as refused:
        runs.read_run(tmp_path / "run.trec", known_docids=known_docids.KnownDocids(known))
    assert (refused.value.line, refused.value.problem) == (4, "docid 'missing' is not in the collection")
    skipped = Skipped()
    table = runs.read_run(tmp_path / "run.trec", known_docids=known, skipped=skipped)
    assert [(e.line, e.problem) for e in skipped.errors] == [
        (4, "docid 'missing' is not in the collection"),
        (18, "docid 'nowhere' is not in the collection"),
    ]
    assert len(table.frame) == 98 and "missing" not in table.frame["docid"].to_list()


# --- the index kept between processes (a user types one import_run per file) -----------------


def _saved(path: Path, docids: list[str], source: str = "collection A") -> known_docids.KnownDocids:
    return known_docids.KnownDocids(pl.Series(docids, dtype=pl.String), saved=path, source=source, rows=len(docids))


def _no_docids() -> pl.Series:
    raise AssertionError("the saved index should have been used, not the collection's docids")


def test_the_saved_index_is_used_by_the_next_process_and_answers_the_same(tmp_path):
    saved = tmp_path / "c.known.parquet"
    docids = [f"d{i}" for i in range(1000)]
    asked = pl.Series(["d5", "d999", "d1000", "x", "d05"], dtype=pl.String)
    first = _saved(saved, docids).contains(asked)
    assert saved.exists()
    again = known_docids.KnownDocids(_no_docids, saved=saved, source="collection A", rows=1000)
    assert (again.contains(asked) == first).all() and first.tolist() == [True, True, False, False, False]


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),  # cut short
        lambda p: p.write_bytes(b"PAR1" + b"\0" * 64 + b"PAR1"),  # not Parquet at all
        lambda p: p.write_bytes(p.read_bytes()[:200] + bytes(300) + p.read_bytes()[500:]),  # overwritten inside
        lambda p: p.unlink(),
    ],
    ids=["truncated", "garbage", "overwritten", "removed"],
)
def test_a_damaged_saved_index_is_rebuilt_not_trusted(tmp_path, damage):
    saved = tmp_path / "c.known.parquet"
    docids = [f"d{i}" for i in range(1000)]
    _saved(saved, docids).contains(pl.Series(["d1"]))
    damage(saved)
    rebuilt = _saved(saved, docids)
    assert rebuilt.contains(pl.Series(["d1", "d999", "zz"], dtype=pl.String)).tolist() == [True, True, False]
    assert (
        known_docids.load_known_index(saved, known_docids.known_index_source("collection A"), 1000) is not None
    )  # rewritten


def test_a_saved_index_of_another_collection_or_size_is_not_used(tmp_path):
    saved = tmp_path / "c.known.parquet"
    _saved(saved, ["a", "b", "c"], source="collection A")
    # Another collection's content at the same place (a foreign file): its docids are not this one's.
    other = _saved(saved, ["x", "y"], source="collection B")
    assert other.contains(pl.Series(["a", "x"], dtype=pl.String)).tolist() == [False, True]
    # The same source claimed with another number of docids, or rows out of hash order: refused.
    source = known_docids.known_index_source("collection B")
    assert known_docids.load_known_index(saved, source, rows=3) is None
    assert known_docids.load_known_index(saved, source, rows=2) is not None
    index = pl.read_parquet(saved).sort("hash", descending=True)
    known_docids.save_known_index(index, saved, source)
    assert known_docids.load_known_index(saved, source, rows=2) is None


def test_a_saved_index_of_another_polars_hash_is_not_used(tmp_path, monkeypatch):
    saved = tmp_path / "c.known.parquet"
    _saved(saved, ["a", "b"])
    monkeypatch.setattr(pl, "__version__", "0.0.0-other")
    assert known_docids.load_known_index(saved, known_docids.known_index_source("collection A"), 2) is None


def test_docids_sharing_a_hash_are_told_apart_by_their_text():
    """Two docids with one 8-byte hash (a collision, forced here): each entry of the hash is
    compared, so the one the collection holds is found and the other is not."""
    held = pl.Series(["x", "z"], dtype=pl.String)
    x_hash, z_hash = held.hash(seed=0).to_list()
    known = known_docids.KnownDocids(held)
    # "y" in the index under x's hash, before "x": the first entry of that hash is not x.
    known.__dict__["_index"] = pl.DataFrame(
        {"hash": pl.Series([x_hash, x_hash, z_hash], dtype=pl.UInt64), "known": ["y", "x", "z"]}
    ).sort("hash", maintain_order=True)
    found = known.contains(pl.Series(["x", "y", "z", "w"], dtype=pl.String))
    assert found.tolist() == [True, False, True, False]  # y's own hash is not x's: not held


def test_an_index_that_cannot_be_saved_still_answers(tmp_path):
    nowhere = tmp_path / "no such folder" / "c.known.parquet"
    known = _saved(nowhere, ["a", "b"])
    assert known.contains(pl.Series(["a", "c"], dtype=pl.String)).tolist() == [True, False]
    assert not nowhere.parent.exists()


@pytest.mark.parametrize("seed", range(6))
def test_the_orders_by_score_are_the_sorts_whether_or_not_the_run_is_in_score_order(seed):
    """A run written in score order skips the sort of its rows (one pass checks it): both orders are still
    exactly numpy's stable lexicographic sorts, computed here, with ties (scores from 8 values) in every query."""
    rng = np.random.default_rng(seed)
    n = 3000
    block = np.sort(rng.integers(0, 60, n))
    score = rng.integers(0, 8, n).astype(float)
    docid = np.array([f"d{i}" for i in rng.permutation(n)])
    if seed % 2 == 0:  # as rankers write runs: by score within each query, file order among ties
        order = np.lexsort((np.arange(n), -score, block))
        score, docid = score[order], docid[order]
    frame = pl.DataFrame({"block": block, "score": score, "line": np.arange(1, n + 1), "docid": docid})
    stable, trec, _ = runs._score_orders(frame)
    assert (stable == np.lexsort((np.arange(n), -score, block))).all()
    docid_rank = np.argsort(np.argsort(docid))  # larger docid, larger rank
    assert (trec == np.lexsort((-docid_rank, -score, block))).all()
    assert (stable != np.arange(n)).any() == (seed % 2 == 1)  # the odd seeds' runs were out of order


@pytest.mark.parametrize("seed", range(4))
def test_repeated_pairs_are_exactly_the_later_lines_of_a_pair_seen_before(seed):
    """Against a set of the pairs seen, line by line: queries interleaved, a docid shared by queries,
    and one pair repeated on several lines."""
    rng = random.Random(seed)
    rows = [(f"q{rng.randrange(40)}", f"d{rng.randrange(300)}") for _ in range(5000)]
    fields = pl.DataFrame(
        {"line": range(1, len(rows) + 1), "qid": [q for q, _ in rows], "docid": [d for _, d in rows]},
        schema={"line": pl.Int64, "qid": pl.String, "docid": pl.String},
    )
    seen, expected = set(), []
    for line, pair in enumerate(rows, 1):
        if pair in seen:
            expected.append(line)
        seen.add(pair)
    assert runs._repeated_pairs(fields)["line"].to_list() == expected and expected


def test_ranks_count_from_one_within_each_block():
    block = np.array([1, 1, 1, 2, 3, 3, 7, 7, 7, 7, 2])
    expected = [1, 2, 3, 1, 1, 2, 1, 2, 3, 4, 1]
    assert runs._ranks(block).tolist() == expected
    assert runs._ranks(block[:0]).tolist() == []


@pytest.mark.parametrize(
    "text",
    [
        "q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 t\n",
        "q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 t",
        "q1 Q0 d1 1 2.5 t\r\n",
        "a\tb\n\n",
        "é\n",
    ],
)
def test_one_pass_over_a_run_files_bytes_gives_its_hash_and_what_the_columnar_reader_cannot_see(tmp_path, text):
    import hashlib

    path = tmp_path / "run.trec"
    path.write_bytes(text.encode())
    scanned = runs.scan_run_bytes(path)
    data = path.read_bytes()
    assert scanned.sha256 == hashlib.sha256(data).hexdigest()
    assert scanned.lines == len(data.decode().splitlines())
    assert scanned.carriage_return == ("\r" in text)
    assert scanned.ascii_spaces_only == (text.isascii() and not any(c in text for c in "\t\x0b\x0c"))


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


@pytest.mark.parametrize("compressed", [False, True], ids=["columnar", "block"])
@pytest.mark.parametrize(("run_format", "line"), [("trec", "q1 Q0 d2 -1 0.5 t"), ("msmarco", "q1 d2 -1")])
def test_a_negative_rank_is_refused_naming_the_line(tmp_path, compressed, run_format, line):
    first = "q1 Q0 d1 1 0.9 t" if run_format == "trec" else "q1 d1 1"
    text = f"{first}\n{line}\n"
    path = tmp_path / ("r.trec.gz" if compressed else "r.trec")
    path.write_bytes(gzip.compress(text.encode()) if compressed else text.encode())
    with pytest.raises(InputError) as raised:
        read_run(path, run_format=run_format)
    assert str(raised.value) == f"{path}:2: rank '-1' is negative"


def test_rank_zero_is_read(tmp_path):
    path = tmp_path / "r.trec"
    path.write_text("q1 Q0 d1 0 0.9 t\nq1 Q0 d2 1 0.5 t\n")
    assert read_run(path).frame["docid"].to_list() == ["d1", "d2"]

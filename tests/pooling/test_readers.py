"""Readers: valid input parses; every kind of bad input names file, line and problem."""

import gzip
import hashlib

import numpy as np
import polars as pl
import pytest

from genderbias.errors import InputError, Skipped
from genderbias.files.collection import parse_passages, scan_collection
from genderbias.files.queryfiles import read_queries, single_line
from genderbias.files.runs import read_run


def docids(tmp_path) -> list[str]:
    return pl.read_parquet(tmp_path / "index.parquet")["docid"].to_list()


def write(tmp_path, name, content: str | bytes):
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


# --- collections ---------------------------------------------------------------------------


def test_collection_splits_on_first_tab_and_lists_docids(tmp_path):
    path = write(tmp_path, "c.tsv", "0\tHe said\tsomething\n1\tShe laughed\n\n7\tThe end\n")
    scan = scan_collection(path, index_path=tmp_path / "index.parquet")
    assert docids(tmp_path) == ["0", "1", "7"]
    assert scan.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert scan.passages == 3
    assert scan.size == path.stat().st_size


def test_collection_gzip_is_read_by_content(tmp_path):
    path = write(tmp_path, "c.data", gzip.compress(b"a\tone\nb\ttwo\n"))
    scan = scan_collection(path, index_path=tmp_path / "index.parquet")
    assert docids(tmp_path) == ["a", "b"]
    assert scan.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()  # of the file as stored


def test_collection_line_without_tab(tmp_path):
    path = write(tmp_path, "c.tsv", "0\tok\n1 no tab here\n")
    with pytest.raises(InputError) as err:
        scan_collection(path)
    assert str(err.value) == f"{path}:2: no tab between passage id and text"


def test_collection_invalid_utf8_names_the_line(tmp_path):
    path = write(tmp_path, "c.tsv", b"0\tok\n1\tfine\n2\tbad \xff byte\n")
    with pytest.raises(InputError, match=r"c\.tsv:3: invalid UTF-8 \(byte 0xff\)"):
        scan_collection(path)


def test_collection_duplicate_pid(tmp_path):
    path = write(tmp_path, "c.tsv", "0\ta\n1\tb\n0\tc\n")
    with pytest.raises(InputError, match=r"c\.tsv:3: passage id '0' repeats \(first on line 1\)"):
        scan_collection(path, index_path=tmp_path / "index.parquet")
    assert not (tmp_path / "index.parquet").exists()
    assert list(tmp_path.glob("*.tmp")) == []


def test_collection_errors_across_block_boundaries_keep_file_line_numbers(tmp_path, monkeypatch):
    import genderbias.files.blocks as blocks

    monkeypatch.setattr(blocks, "BLOCK_SIZE", 16)
    lines = "".join(f"{i}\tpassage number {i}\n" for i in range(50)) + "50 missing tab\n"
    path = write(tmp_path, "c.tsv", lines)
    with pytest.raises(InputError, match=r":51: no tab"):
        scan_collection(path)


def test_collection_skip_bad_lines_reports_them(tmp_path):
    path = write(tmp_path, "c.tsv", "0\ta\nbroken\n2\tc\n")
    skipped = Skipped()
    scan_collection(path, index_path=tmp_path / "index.parquet", skipped=skipped)
    assert docids(tmp_path) == ["0", "2"]
    assert [e.line for e in skipped.errors] == [2]


# --- queries -------------------------------------------------------------------------------


def test_queries_in_file_order(tmp_path):
    path = write(tmp_path, "q.tsv", "5\twhat is a synapse\n3\twho is she\n")
    assert read_queries(path) == [("5", "what is a synapse"), ("3", "who is she")]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("1\tok\n2 no tab\n", ":2: no tab between query id and query text"),
        ("1\tok\n\tempty id\n", ":2: empty query id"),
        ("1\tok\n2\t  \n", ":2: query '2' has no text"),
        ("1\tok\n2\tfine\n1\tagain\n", ":3: query id '1' repeats (first on line 1)"),
    ],
)
def test_queries_bad_lines(tmp_path, content, message):
    path = write(tmp_path, "q.tsv", content)
    with pytest.raises(InputError) as err:
        read_queries(path)
    assert str(err.value) == f"{path}{message}"


# --- runs ----------------------------------------------------------------------------------


def test_run_any_whitespace_and_score_order(tmp_path):
    path = write(tmp_path, "r.trec", "1 Q0 a 1 1.5 x\n1\tQ0\tb\t2\t3.0\tx\n2  Q0  c  1  0.1  x\n")
    frame = read_run(path).frame
    assert frame.rows() == [("1", "b", 1, 3.0), ("1", "a", 2, 1.5), ("2", "c", 1, 0.1)]


def test_run_ties_broken_by_docid_descending_like_trec_eval(tmp_path):
    # Tied scores: the file lists doc10 first; trec_eval puts the larger docid string first.
    path = write(tmp_path, "r.trec", "1 Q0 doc10 1 2.0 x\n1 Q0 doc9 2 2.0 x\n1 Q0 doc1 3 1.0 x\n2 Q0 z 1 1 x\n")
    table = read_run(path)
    assert table.frame.filter(pl.col("qid") == "1")["docid"].to_list() == ["doc9", "doc10", "doc1"]
    assert table.reordered_ties == 1
    assert table.reordered_rows == 2


def test_run_file_order_keeps_the_file(tmp_path):
    path = write(tmp_path, "r.trec", "1 Q0 low 1 1.0 x\n1 Q0 high 2 9.0 x\n")
    assert read_run(path, order="file").frame["docid"].to_list() == ["low", "high"]
    assert read_run(path, order="score").frame["docid"].to_list() == ["high", "low"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("1 Q0 a 1 1.0 x\n1 Q0 b 2 1.0\n", ":2: expected 6 columns (qid Q0 docid rank score tag), found 5"),
        ("1 Q0 a 1 1.0 x\n1 Q0 b 2 high x\n", ":2: score 'high' is not a number"),
        ("1 Q0 a 1 1.0 x\n1 Q0 a 2 0.5 x\n", ":2: docid 'a' appears twice for query '1'"),
        ("1 Q0 a 1 1.0 x\n1 Q0 b 2.5 0.5 x\n", ":2: rank '2.5' is not an integer"),
        ("1 Q0 a 1 1.0 x\n1 Q0 b 2 inf x\n", ":2: score 'inf' is not finite"),
        ("1 Q0 a 1 1.0 x\n1 Q0 b 2 -Infinity x\n", ":2: score '-Infinity' is not finite"),
        ("1 Q0 a 1 nan x\n", ":1: score 'nan' is not a number"),
        ("1 Q0 a 1 1.0\n", ":1: found 5 columns: expected 6 (qid Q0 docid rank score tag) or 3 (qid docid rank)"),
    ],
)
def test_run_bad_lines(tmp_path, content, message):
    path = write(tmp_path, "r.trec", content)
    with pytest.raises(InputError) as err:
        read_run(path)
    assert str(err.value) == f"{path}{message}"


def test_run_invalid_utf8(tmp_path):
    path = write(tmp_path, "r.trec", b"1 Q0 a 1 1.0 x\n1 Q0 \xc3\x28 2 0.5 x\n")
    with pytest.raises(InputError, match=r"r\.trec:2: invalid UTF-8"):
        read_run(path)


def test_run_docid_not_in_collection(tmp_path):
    path = write(tmp_path, "r.trec", "1 Q0 a 1 1.0 x\n1 Q0 ghost 2 0.5 x\n")
    with pytest.raises(InputError, match=r"r\.trec:2: docid 'ghost' is not in the collection"):
        read_run(path, known_docids=pl.Series(["a", "b"]))


def test_run_skip_bad_lines_keeps_the_rest_and_counts(tmp_path):
    path = write(tmp_path, "r.trec", "1 Q0 a 1 1.0 x\n1 Q0 b 2 oops x\n1 Q0 c 3 0.2 x\n1 Q0 ghost 4 0.1 x\n")
    skipped = Skipped()
    table = read_run(path, known_docids=pl.Series(["a", "b", "c"]), skipped=skipped)
    assert table.frame["docid"].to_list() == ["a", "c"]
    assert table.frame["rank"].to_list() == [1, 2]
    assert sorted(e.line for e in skipped.errors) == [2, 4]


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_run(tmp_path / "absent.trec")


def test_queries_split_on_newlines_only(tmp_path):
    # U+2028 and U+0085 occur inside real query text; str.splitlines would break the line
    # there. They stay inside their line, and become a space (the normalisation rule).
    path = write(tmp_path, "q.tsv", "1\tline\u2028separator inside\r\n2\tnext\x85line\n3 no tab\n")
    with pytest.raises(InputError) as err:
        read_queries(path)
    assert err.value.line == 3
    skipped = Skipped()
    assert read_queries(path, skipped=skipped) == [("1", "line separator inside"), ("2", "next line")]


def test_query_control_characters_become_spaces(tmp_path):
    # Each control character or separator is one space; other whitespace is kept as it is.
    text = "a\rb\vc\fd\x85e\u2028f\u2029g\x00h\x1bi\x7fj\x9fk  l\u00a0m"
    path = write(tmp_path, "q.tsv", f"1\t{text}\n")
    assert read_queries(path) == [("1", "a b c d e f g h i j k  l\u00a0m")]
    assert single_line(text) == "a b c d e f g h i j k  l\u00a0m"


@pytest.mark.parametrize("line", ["2\tquery\tthird column", "2\tquery\t", "2\ta\t\tb"])
def test_query_line_with_a_second_tab_is_refused(tmp_path, line):
    path = write(tmp_path, "q.tsv", f"1\tok\n{line}\n3\tfine\n")
    with pytest.raises(InputError) as err:
        read_queries(path)
    assert str(err.value) == f"{path}:2: more than one tab: expected qid<TAB>query (a query text holds no tab)"
    skipped = Skipped()
    assert read_queries(path, skipped=skipped) == [("1", "ok"), ("3", "fine")]
    assert [e.line for e in skipped.errors] == [2]


def test_score_order_equals_a_full_sort_on_many_ties(tmp_path):
    # The reader sorts only tie groups by docid; a plain full sort must give the same ranking.
    rng = np.random.default_rng(7)
    rows = [
        (f"q{q}", f"d{d}", float(rng.integers(0, 4)))
        for q in range(40)
        for d in rng.choice(1000, size=int(rng.integers(1, 30)), replace=False)
    ]
    path = write(tmp_path, "r.trec", "".join(f"{q} Q0 {d} 0 {s} t\n" for q, d, s in rows))
    got = read_run(path).frame
    expected = (
        pl.DataFrame(rows, schema=["qid", "docid", "score"], orient="row")
        .with_columns(pl.int_range(pl.len()).alias("order"))
        .with_columns(pl.col("order").min().over("qid").alias("first"))
        .sort(["first", "score", "docid"], descending=[False, True, True])
    )
    assert got["docid"].to_list() == expected["docid"].to_list()
    assert got["qid"].to_list() == expected["qid"].to_list()


def test_run_interleaved_query_blocks_are_gathered_like_trec_eval(tmp_path):
    # Query 1's lines come in two blocks around query 2's: accepted, gathered at query 1's place.
    path = write(tmp_path, "r.trec", "1 Q0 a 1 1.0 x\n2 Q0 b 1 1.0 x\n1 Q0 c 2 2.0 x\n2 Q0 d 2 0.5 x\n3 Q0 e 1 1 x\n")
    table = read_run(path)
    assert table.frame.rows() == [
        ("1", "c", 1, 2.0),
        ("1", "a", 2, 1.0),
        ("2", "b", 1, 1.0),
        ("2", "d", 2, 0.5),
        ("3", "e", 1, 1.0),
    ]
    assert table.interleaved_queries == 2
    assert read_run(path, order="file").frame["docid"].to_list() == ["a", "c", "b", "d", "e"]
    contiguous = write(tmp_path, "s.trec", "1 Q0 a 1 1.0 x\n1 Q0 c 2 2.0 x\n2 Q0 b 1 1.0 x\n")
    assert read_run(contiguous).interleaved_queries == 0


def test_msmarco_run_format_detected_and_ordered_by_rank(tmp_path):
    path = write(tmp_path, "r.tsv", "1\tb\t2\n1\ta\t1\n2\tc\t1\n")
    table = read_run(path)
    assert table.format == "msmarco"
    assert table.frame.rows() == [("1", "a", 1, -1.0), ("1", "b", 2, -2.0), ("2", "c", 1, -1.0)]
    assert read_run(path, order="file").frame["docid"].to_list() == ["b", "a", "c"]
    assert read_run(path, run_format="msmarco").frame.equals(table.frame)


def test_run_format_chosen_explicitly_names_the_bad_line(tmp_path):
    path = write(tmp_path, "r.tsv", "1\ta\t1\n1\tb\ttwo\n1 b\n")
    with pytest.raises(InputError) as err:
        read_run(path, run_format="msmarco")
    assert str(err.value) == f"{path}:3: expected 3 columns (qid docid rank), found 2"
    with pytest.raises(InputError) as err:
        read_run(path, run_format="trec")
    assert str(err.value) == f"{path}:1: expected 6 columns (qid Q0 docid rank score tag), found 3"
    skipped = Skipped()
    read_run(path, run_format="msmarco", skipped=skipped)
    assert [str(e) for e in skipped.errors] == [
        f"{path}:3: expected 3 columns (qid docid rank), found 2",
        f"{path}:2: rank 'two' is not an integer",
    ]


@pytest.mark.parametrize("reader", ["collection", "queries", "run"])
def test_truncated_or_corrupt_gzip_is_a_clear_error(tmp_path, reader):
    content = {
        "collection": "".join(f"p{i}\tpassage number {i} with some words\n" for i in range(5000)),
        "queries": "".join(f"q{i}\tquery {i}\n" for i in range(5000)),
        "run": "".join(f"q{i // 100} Q0 d{i} {i % 100 + 1} {1 / (i + 1)} t\n" for i in range(5000)),
    }[reader]
    read = {"collection": scan_collection, "queries": read_queries, "run": read_run}[reader]
    whole = gzip.compress(content.encode())
    truncated = tmp_path / "truncated.gz"
    truncated.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(InputError) as err:
        read(truncated)
    assert str(err.value) == f"{truncated}: the gzip file is truncated (it ends before its last block)"
    corrupt = tmp_path / "corrupt.gz"
    corrupt.write_bytes(whole[:20] + bytes(b ^ 0xFF for b in whole[20:60]) + whole[60:])
    with pytest.raises(InputError) as err:
        read(corrupt)
    assert str(err.value).startswith(f"{corrupt}: the gzip file is corrupt (")


def test_passage_ids_are_stripped_of_surrounding_whitespace(tmp_path):
    path = write(tmp_path, "c.tsv", " c1 \tfirst passage\nc2\t second\n")
    frame = parse_passages(path, pl.DataFrame({"line": [1, 2], "text": [" c1 \tfirst passage", "c2\t second"]}))
    assert frame["docid"].to_list() == ["c1", "c2"]
    index = tmp_path / "index.parquet"
    assert scan_collection(path, index_path=index).passages == 2
    assert pl.read_parquet(index)["docid"].to_list() == ["c1", "c2"]
    repeated = write(tmp_path, "r.tsv", "c1\tfirst\n c1\tagain\n")
    with pytest.raises(InputError, match=r"r\.tsv:2: passage id 'c1' repeats \(first on line 1\)"):
        scan_collection(repeated)

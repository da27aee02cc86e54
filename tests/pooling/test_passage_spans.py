"""The docid index keeps where each passage's text is, and counting reads just those bytes.

Invariant tested here: for every passage, ``file[start:start + length]`` is exactly the text
the line parser gives, whatever the line endings, byte-order mark, multi-byte ids, blank
lines or block boundaries; and counting at the spans equals counting in a full pass.
"""

import random

import polars as pl
import pyarrow.parquet as pq
import pytest

from genderbias.files import blocks
from genderbias.files.blocks import iter_blocks
from genderbias.files.collection import parse_passages, read_passage_texts, scan_collection
from genderbias.text.magnitudes import document_counts, document_counts_at
from genderbias.text.wordlists import GenderWords

WORDS = GenderWords(frozenset({"she", "her", "woman"}), frozenset({"he", "his", "man"}), name="tiny")

TRICKY_LINES = [
    "p1\tHe said she was his sister.",
    " p2 \twoman  man\the",  # id with spaces; a second tab stays in the text
    "é1\tΣΑΣ she ünïcode",  # a multi-byte id: the text starts after its bytes, not its characters
    "",  # a blank line is no passage
    "ééé\the",
    "p5\t",  # an empty passage
    "p6\this her hers",
]


def write(path, lines, newline="\n", bom=False, final_newline=True):
    data = newline.join(lines) + (newline if final_newline else "")
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + data.encode())
    return path


def expected_texts(lines):
    return {line.split("\t", 1)[0].strip(): line.split("\t", 1)[1] for line in lines if line}


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
@pytest.mark.parametrize("bom", [False, True])
@pytest.mark.parametrize("final_newline", [True, False])
def test_spans_point_at_each_text_exactly(tmp_path, monkeypatch, newline, bom, final_newline):
    monkeypatch.setattr(blocks, "BLOCK_SIZE", 16)  # many blocks: lines cross their boundaries
    path = write(tmp_path / "c.tsv", TRICKY_LINES, newline, bom, final_newline)
    data = path.read_bytes()
    rows = pl.concat([parse_passages(path, lines) for lines, _ in iter_blocks(path, offsets=True)])
    assert dict(zip(rows["docid"], rows["text"], strict=True)) == expected_texts(TRICKY_LINES)
    for docid, start, length in rows.select("docid", "start", "length").iter_rows():
        assert data[start : start + length].decode() == expected_texts(TRICKY_LINES)[docid]


def test_parser_splits_at_the_tab_byte_not_character(tmp_path):
    """Regression: the tab's byte position was used as a character position, cutting texts
    after a multi-byte id (``ééé\\the`` gave the text ``e``)."""
    path = write(tmp_path / "c.tsv", ["ééé\the", "é1\tabc"])
    frame = next(parse_passages(path, lines) for lines, _ in iter_blocks(path))
    assert frame["docid"].to_list() == ["ééé", "é1"]
    assert frame["text"].to_list() == ["he", "abc"]


def test_index_of_a_plain_file_has_spans_and_of_a_gzipped_one_not(tmp_path):
    import gzip

    plain = write(tmp_path / "c.tsv", TRICKY_LINES)
    scan_collection(plain, index_path=tmp_path / "plain.parquet")
    assert pq.read_schema(tmp_path / "plain.parquet").names == ["docid", "start", "length"]
    zipped = tmp_path / "c.tsv.gz"
    zipped.write_bytes(gzip.compress(plain.read_bytes()))
    scan_collection(zipped, index_path=tmp_path / "zipped.parquet")
    assert pq.read_schema(tmp_path / "zipped.parquet").names == ["docid"]


def test_reading_at_spans_gives_the_texts_of_any_subset(tmp_path):
    rng = random.Random(7)
    words = ["he", "she", "his", "her", "man", "woman", "the", "a", "Ünï", "x,y"]
    lines = [f"d{i}\t" + " ".join(rng.choice(words) for _ in range(rng.randint(0, 30))) for i in range(3000)]
    path = write(tmp_path / "c.tsv", lines)
    scan_collection(path, index_path=tmp_path / "index.parquet")
    index = pl.read_parquet(tmp_path / "index.parquet")
    subset = index.sample(700, seed=3)
    texts = read_passage_texts(path, subset, block_size=1000)  # many reads, spans across them
    expected = expected_texts(lines)
    assert len(texts) == 700
    assert all(text == expected[docid] for docid, text in texts.iter_rows())


@pytest.mark.parametrize("tokenizer", ["words", "whitespace"])
def test_counting_at_spans_equals_a_full_pass(tmp_path, tokenizer):
    rng = random.Random(11)
    words = ["He", "she.", "she", "his", "her,", "her", "man", "woman's", "the", "  ", "Ünï", "manhood"]
    lines = [f"d{i}\t" + " ".join(rng.choice(words) for _ in range(rng.randint(0, 40))) for i in range(2000)]
    path = write(tmp_path / "c.tsv", lines, newline="\r\n")
    scan_collection(path, index_path=tmp_path / "index.parquet")
    subset = pl.read_parquet(tmp_path / "index.parquet").sample(500, seed=5)
    at_spans = document_counts_at(path, subset, WORDS, tokenizer, batch=64).sort("docid")
    full_pass = document_counts(path, subset["docid"], WORDS, tokenizer).sort("docid")
    assert at_spans.equals(full_pass)
    assert at_spans["f"].sum() > 0 and at_spans["m"].sum() > 0


@pytest.mark.django_db
def test_counts_for_a_pool_read_spans_and_equal_an_index_without_them(world, settings):
    """``document_counts_for`` reads the spans the import stored; an index written before
    spans were kept (or of a gzipped file) falls back to a full pass with the same counts."""
    import shutil
    from pathlib import Path

    from pooling import selectors, services
    from pooling.models import Collection

    collection = Collection.objects.get(name="tiny")
    assert selectors.passage_spans(collection, pl.Series(["d2", "d4", "nope"]))["docid"].sort().to_list() == [
        "d2",
        "d4",
    ]
    with_spans = services.document_counts_for(collection, ["d1", "d2", "d4"], WORDS, "words", bar=False)
    assert with_spans.sort("docid").rows() == [("d1", 2, 0, 4), ("d2", 0, 2, 4), ("d4", 1, 1, 5)]

    index = Path(collection.docid_index)
    pl.read_parquet(index, columns=["docid"]).write_parquet(index)  # an index without spans
    shutil.rmtree(Path(settings.CACHE_DIR) / "counts")
    assert selectors.passage_spans(collection, pl.Series(["d2"])) is None
    without = services.document_counts_for(collection, ["d1", "d2", "d4"], WORDS, "words", bar=False)
    assert without.sort("docid").equals(with_spans.sort("docid"))

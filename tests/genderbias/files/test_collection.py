"""A collection's scan: its content hash (on a second thread beside the parsing) is the file's SHA-256, and
its index (built on another beside the reading) holds every passage in file order, errors named in file order."""

import gzip
import hashlib

import polars as pl
import pytest

from genderbias.errors import InputError
from genderbias.files import blocks, collection
from genderbias.files.textfiles import MAX_LINE_BYTES


@pytest.mark.parametrize("packed", [False, True])
def test_the_scan_hashes_every_byte_in_order_across_blocks(tmp_path, packed):
    # Blocks of 64 bytes: hundreds of them, each hashed on the other thread in turn.
    text = "".join(f"p{i}\tpassage number {i} with some words\n" for i in range(2000)).encode()
    path = tmp_path / ("c.tsv.gz" if packed else "c.tsv")
    path.write_bytes(gzip.compress(text) if packed else text)
    digest = hashlib.sha256()
    lines = sum(len(frame) for frame, _ in blocks.iter_blocks(path, block_size=64, digest=digest))
    assert lines == 2000
    assert digest.hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()
    assert collection.scan_collection(path).sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_index_built_beside_the_reading_is_every_passage_in_file_order(tmp_path, monkeypatch):
    monkeypatch.setattr(blocks, "BLOCK_SIZE", 2048)  # dozens of blocks, each indexed on the other thread
    texts = [f"p{i}\tpassage {'é' * (i % 7)} number {i}" for i in range(3000)]
    path = tmp_path / "c.tsv"
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    seen = []
    scan = collection.scan_collection(path, tmp_path / "index.parquet", progress=seen.append)
    index = pl.read_parquet(tmp_path / "index.parquet")
    data, start, expected = path.read_bytes(), 0, []
    for line in data.split(b"\n")[:-1]:  # the spans computed here from the bytes
        docid, _, text = line.partition(b"\t")
        expected.append((docid.decode(), start + len(docid) + 1, len(text)))
        start += len(line) + 1
    assert scan.passages == 3000 and index.rows() == expected
    assert seen == sorted(seen) and seen[-1] == len(data)


def test_a_bad_line_indexed_on_the_other_thread_is_named_before_the_next_blocks_error(tmp_path, monkeypatch):
    """Line 100 lacks its tab and line 101 is longer than any reader takes: the block of lines 1–100 is
    still being indexed when the reading finds line 101 too long, and the error is line 100's."""
    monkeypatch.setattr(blocks, "BLOCK_SIZE", 64 * 1024)
    lines = [f"p{i}\tpassage {i}" for i in range(100)]
    path = tmp_path / "c.tsv"
    long_line = "p100\t" + "w " * MAX_LINE_BYTES
    for bad, expected in ((True, (100, "no tab between passage id and text")), (False, (101, None))):
        lines[99] = "p99 has no tab" if bad else "p99\tfixed"
        path.write_text("\n".join([*lines, long_line, "p101\tlast"]) + "\n")
        with pytest.raises(InputError) as refused:
            collection.scan_collection(path, tmp_path / "index.parquet")
        assert refused.value.line == expected[0]
        assert refused.value.problem == expected[1] or "longer than" in refused.value.problem
        assert not (tmp_path / "index.parquet").exists()  # nothing half-written

"""A collection's content hash, computed on a second thread beside the parsing, is the file's SHA-256."""

import gzip
import hashlib

import pytest

from genderbias.files import blocks, collection


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

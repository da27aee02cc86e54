"""The collection scan split into byte ranges over Celery workers (eager here) equals one pass."""

import gzip
import itertools

import polars as pl
import pytest

from genderbias.files.blocks import byte_ranges
from genderbias.text.magnitudes import document_counts
from genderbias.text.wordlists import default_wordlist
from pooling import services
from pooling.models import Collection, ScanChunk

WORDS = ["she", "he", "her", "his", "man", "woman", "mother", "father", "the", "a"]


def write_collection(path, passages: int) -> None:
    path.write_text(
        "".join(
            f"p{i}\t{' '.join(WORDS[(i * k) % len(WORDS)] for k in range(1, 2 + i % 13))}\n" for i in range(passages)
        )
    )


def test_byte_ranges_start_at_line_starts_and_cover_the_file(tmp_path):
    path = tmp_path / "c.tsv"
    write_collection(path, 1000)
    data = path.read_bytes()
    ranges = byte_ranges(path, 7)
    assert len(ranges) == 7
    assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
    assert all(end == next_start for (_, end), (next_start, _) in itertools.pairwise(ranges))
    assert all(data[start - 1 : start] == b"\n" for start, _ in ranges[1:])


def test_byte_ranges_more_chunks_than_lines(tmp_path):
    path = tmp_path / "c.tsv"
    path.write_text("a\tx\nb\ty\n")
    assert byte_ranges(path, 10) == [(0, 4), (4, 8)]


def test_gzip_cannot_be_split(tmp_path):
    path = tmp_path / "c.tsv.gz"
    path.write_bytes(gzip.compress(b"a\tx\nb\ty\n" * 100))
    assert byte_ranges(path, 4) == [(0, path.stat().st_size)]


@pytest.mark.django_db
@pytest.mark.parametrize("chunks", [1, 2, 5])
def test_chunked_counts_equal_single_pass(tmp_path, chunks):
    path = tmp_path / "c.tsv"
    write_collection(path, 3000)
    services.import_collection(path, "c", bar=False)
    collection = Collection.objects.get(name="c")
    docids = [f"p{i}" for i in range(0, 3000, 3)]
    words = default_wordlist()
    single = document_counts(path, docids, words, "words").sort("docid")
    chunked = services.document_counts_chunked(collection, docids, words, "words", chunks=chunks).sort("docid")
    assert len(single) == 1000
    assert chunked.equals(single)
    assert ScanChunk.objects.filter(status=ScanChunk.Status.DONE).count() == chunks
    every = services.document_counts_chunked(collection, None, words, "words", chunks=chunks).sort("docid")
    assert every.equals(document_counts(path, None, words, "words").sort("docid")) and len(every) == 3000


@pytest.mark.django_db
def test_a_lost_chunk_is_redone_and_a_done_chunk_not_counted_twice(tmp_path, monkeypatch):
    path = tmp_path / "c.tsv"
    write_collection(path, 2000)
    services.import_collection(path, "c", bar=False)
    collection = Collection.objects.get(name="c")
    words = default_wordlist()
    docids = [f"p{i}" for i in range(2000)]
    first = services.document_counts_chunked(collection, docids, words, "words", chunks=3)
    # A worker was lost on chunk 1: its row is pending again, its file never written.
    lost = ScanChunk.objects.get(index=1)
    ScanChunk.objects.filter(pk=lost.pk).update(status=ScanChunk.Status.PENDING, result="")
    counted = []
    from genderbias.text import magnitudes

    real = magnitudes.document_counts

    def spy(*args, **kwargs):
        counted.append(kwargs["byte_range"])
        return real(*args, **kwargs)

    monkeypatch.setattr(magnitudes, "document_counts", spy)
    again = services.document_counts_chunked(collection, docids, words, "words", chunks=3)
    assert counted == [(lost.start, lost.end)]
    assert again.sort("docid").equals(first.sort("docid"))
    assert again["docid"].n_unique() == len(again) == 2000
    assert ScanChunk.objects.count() == 3


@pytest.mark.django_db
def test_gzipped_collection_is_one_chunk(tmp_path):
    path = tmp_path / "c.tsv.gz"
    plain = tmp_path / "plain.tsv"
    write_collection(plain, 500)
    path.write_bytes(gzip.compress(plain.read_bytes()))
    services.import_collection(path, "c", bar=False)
    counts = services.document_counts_chunked(
        Collection.objects.get(name="c"), ["p1", "p2"], default_wordlist(), "words", chunks=4
    )
    assert ScanChunk.objects.count() == 1
    assert counts.sort("docid").equals(document_counts(plain, ["p1", "p2"], default_wordlist(), "words").sort("docid"))
    assert isinstance(counts, pl.DataFrame)

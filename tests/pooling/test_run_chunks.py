"""The run import split into byte ranges over Celery workers (eager here) equals reading it whole.

What must hold: the same normalised run and the same counters for any number of chunks,
also when a query's lines straddle a chunk boundary or come back later (interleaved
blocks), when scores tie, and when a docid repeats across chunks; errors name the file's
true line; a lost chunk is read again once; a bad line anywhere writes nothing.
"""

import random
from pathlib import Path

import polars as pl
import pytest
from django.core.management import call_command

from core.errors import ServiceError
from genderbias.errors import InputError, Skipped
from genderbias.files.blocks import byte_ranges, line_numbers_at
from genderbias.files.runs import read_run
from pooling import selectors, services
from pooling.models import Collection, Run, ScanChunk

DOCS = [f"d{i}" for i in range(400)]


def write_collection(path):
    path.write_text("".join(f"{doc}\tpassage {doc}\n" for doc in DOCS))
    return path


def write_run(path, seed=3):
    """300 queries x 20 docs, some queries split in two blocks far apart, scores with ties."""
    rng = random.Random(seed)
    blocks = []
    for q in range(300):
        docs = rng.sample(DOCS, 20)
        lines = [f"q{q} Q0 {doc} {rank} {round(rng.random() * 4) / 4} tag\n" for rank, doc in enumerate(docs, 1)]
        if q % 17 == 0:  # interleaved: the second half comes back after other queries
            blocks.append(lines[:10])
            blocks.insert(len(blocks) // 2, lines[10:])
        else:
            blocks.append(lines)
    path.write_text("".join(line for block in blocks for line in block))
    return path


@pytest.fixture
def collection(db, tmp_path):
    services.import_collection(write_collection(tmp_path / "c.tsv"), "c", bar=False)
    return Collection.objects.get(name="c")


def test_line_numbers_at_byte_positions(tmp_path):
    path = tmp_path / "r.txt"
    path.write_bytes(b"a\nbb\n\nccc\n")
    assert line_numbers_at(path, [0, 2, 5, 6, 10]) == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("order", ["score", "file"])
@pytest.mark.parametrize("chunks", [2, 3, 7])
def test_chunked_import_equals_reading_the_run_whole(tmp_path, collection, order, chunks, settings):
    path = write_run(tmp_path / "r.trec")
    assert len(byte_ranges(path, chunks)) == chunks
    whole = read_run(path, order=order, known_docids=selectors.collection_docids(collection))
    assert whole.interleaved_queries > 0 and whole.reordered_ties > 0  # the hard cases are there
    read = []
    real = services.parse_run_chunk
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            services, "parse_run_chunk", lambda chunk_id, *args: (read.append(chunk_id), real(chunk_id, *args))
        )
        run = services.import_run(path, "r", collection, order=order, chunks=chunks).obj
    chunked = services.run_frame(run)
    assert chunked.equals(whole.frame)
    assert (run.rows, run.queries, run.reordered_ties) == (len(whole.frame), whole.queries, whole.reordered_ties)
    assert len(read) == len(set(read)) == chunks  # each chunk read once, by a task
    assert not ScanChunk.objects.exists()  # read: rows and files removed
    assert not any((Path(settings.CACHE_DIR) / "scans").glob("run-*"))


def test_bad_line_in_a_later_chunk_names_its_line_and_writes_nothing(tmp_path, collection):
    path = write_run(tmp_path / "r.trec")
    lines = path.read_text().splitlines(keepends=True)
    lines[4500] = "q1 Q0 d1 first 1.0 tag\n"
    lines[5000] = "q1 Q0 nope 3 1.0 tag\n"
    path.write_text("".join(lines))
    with pytest.raises(InputError) as raised:
        services.import_run(path, "r", collection, chunks=3)
    assert str(raised.value) == f"{path}:4501: rank 'first' is not an integer"
    assert not Run.objects.exists() and not ScanChunk.objects.exists()
    with pytest.raises(InputError, match=":4501: rank 'first'"):  # the same content fails the same way
        services.import_run(path, "r", collection, chunks=3)


def test_skipped_lines_come_back_from_every_chunk_in_file_order(tmp_path, collection):
    path = write_run(tmp_path / "r.trec")
    lines = path.read_text().splitlines(keepends=True)
    for number in (10, 2999, 5990):
        lines[number - 1] = "broken line\n"
    path.write_text("".join(lines))
    result = services.import_run(path, "r", collection, chunks=3, skip_bad_lines=True)
    expected = Skipped()
    read_run(path, known_docids=selectors.collection_docids(collection), skipped=expected)
    assert [str(e) for e in result.skipped.errors] == [str(e) for e in expected.errors]
    assert [e.line for e in result.skipped.errors] == [10, 2999, 5990]


def test_a_lost_chunk_is_read_again_and_only_it(tmp_path, collection, monkeypatch):
    path = write_run(tmp_path / "r.trec")
    real = services.parse_run_chunk
    calls = []

    def lost_second(chunk_id, *args):
        calls.append(chunk_id)
        if ScanChunk.objects.get(pk=chunk_id).index != 1:
            real(chunk_id, *args)  # the worker of chunk 1 dies before marking it done

    monkeypatch.setattr(services, "parse_run_chunk", lost_second)
    with pytest.raises(ServiceError, match=r"chunks \[1\] of the run import are not done"):
        services.import_run(path, "r", collection, chunks=3, timeout=0.5)
    assert not Run.objects.exists()
    lost = ScanChunk.objects.get(index=1, status=ScanChunk.Status.PENDING).pk
    monkeypatch.setattr(
        services, "parse_run_chunk", lambda chunk_id, *args: (calls.append(chunk_id), real(chunk_id, *args))
    )
    run = services.import_run(path, "r", collection, chunks=3).obj
    assert calls.count(lost) == 2 and len(calls) == 4  # three first, then the lost one only
    whole = read_run(path, known_docids=selectors.collection_docids(collection))
    assert services.run_frame(run).equals(whole.frame)


def test_command_option(tmp_path, collection):
    path = write_run(tmp_path / "r.trec")
    call_command("import_run", str(path), name="r", collection="c", chunks=2, verbosity=0)
    assert Run.objects.get(name="r").rows == 6000
    assert pl.read_parquet(Run.objects.get(name="r").data).height == 6000


def test_a_late_second_delivery_of_a_read_chunk_does_nothing(tmp_path, collection, settings):
    """At-least-once delivery: a chunk's task arriving again after the import removed its
    chunks neither fails nor leaves files behind."""
    path = write_run(tmp_path / "r.trec")
    chunk_ids = []
    real = services.parse_run_chunk
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            services, "parse_run_chunk", lambda chunk_id, *a: (chunk_ids.append((chunk_id, a)), real(chunk_id, *a))
        )
        services.import_run(path, "r", collection, chunks=2)
    for chunk_id, arguments in chunk_ids:
        services.parse_run_chunk(chunk_id, *arguments)
    assert not ScanChunk.objects.exists()
    assert not any((Path(settings.CACHE_DIR) / "scans").rglob("*.parquet"))

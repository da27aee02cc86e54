"""Bounded input: a small ``.gz`` that expands to a gigabyte, or one endless line, is refused
by every reader as ``file: problem`` after reading a few megabytes, at flat memory.

The bombs are written on the fly (streamed through gzip, never held whole): 1 GiB of NULs
compresses to about 1 MB. Peak memory is measured in a fresh interpreter per reader
(the child's ``VmHWM``), so one reader's peak is not hidden by the test process's own.
"""

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from genderbias.errors import InputError
from genderbias.files.textfiles import MAX_LINE_BYTES, open_text
from tests.support.compression_bombs import write_repeated

ROOT = Path(__file__).resolve().parents[2]
PROBLEM = f"is longer than {MAX_LINE_BYTES:,} bytes (the limit of every reader)"
#: A bomb compresses about a thousand times: the gzip reader refuses it for its expansion
#: (genderbias.files.textfiles.EXPANSION) after its first few megabytes, before any line is gathered.
BOMB = "the gzip file expands more than 100 times its compressed size"


def refused_as_bomb(message: str, path: Path, line: int) -> bool:
    """The file named at ``line`` for its expansion, or (a reader taking a megabyte at a time
    meets the endless line first) for its line: either way before holding more than megabytes."""
    return message.startswith((f"{path}:{line}: {BOMB}", f"{path}:{line}: the line {PROBLEM}"))


#: The readers' peak must stay far below what holding the expanded file would take (> 1 GiB).
PEAK_LIMIT_MB = 400


def write_gzip(path: Path, head: bytes, fill: bytes, total: int) -> Path:
    """``head`` then ``fill`` repeated up to ``total`` bytes, gzipped (the benchmark's own writer)."""
    return write_repeated(path, fill, total, head)


@pytest.fixture(scope="module")
def bombs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bombs")
    return {
        # 1 GiB of NULs: ~1 MB on disk, one endless line once expanded.
        "nuls": write_gzip(folder / "nuls.tsv.gz", b"", b"\0", 1024**3),
        # Two blank lines (every reader passes over them), then 64 MiB of text without a line break.
        "endless": write_gzip(folder / "endless.tsv.gz", b"\n\n", b"word ", 64 * 1024**2),
    }


# Each reader through its public function: (module, call) as run in the child interpreter.
READERS = {
    "collection": "from genderbias.files.collection import scan_collection; scan_collection(PATH, INDEX)",
    "counts": (
        "from genderbias.text.magnitudes import document_counts; from genderbias.text.wordlists import default_wordlist; "
        "document_counts(PATH, None, default_wordlist(), 'words')"
    ),
    "queries": "from genderbias.files.queryfiles import read_queries; read_queries(PATH)",
    "run": "from genderbias.files.runs import read_run; read_run(PATH)",
    "run-trec": "from genderbias.files.runs import read_run; read_run(PATH, run_format='trec')",
    "wordlist": "from genderbias.text.wordlists import load_wordlist; load_wordlist(PATH)",
    "open_text": "from genderbias.files.textfiles import open_text\nwith open_text(PATH) as lines:\n    for line in lines: pass",
    "counterfactual": (
        "from genderbias.ranking.counterfactual import Swapper, swap_table, write_counterfactual; "
        "write_counterfactual(PATH, INDEX, Swapper(swap_table()))"
    ),
}

CHILD = """
import json, sys
from genderbias.errors import InputError
PATH, INDEX = sys.argv[1], sys.argv[2]
try:
{call}
    outcome = "no error"
except InputError as exc:
    outcome = str(exc)
# VmHWM, not ru_maxrss: Linux carries the parent's peak across fork and exec into ru_maxrss,
# so a child of a large test process would report the parent's size.
peak_kb = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({{"error": outcome, "peak_mb": peak_kb / 1024}}))
"""


def run_reader(reader: str, path: Path, tmp_path: Path) -> dict:
    call = "\n".join("    " + line for line in READERS[reader].splitlines())
    done = subprocess.run(
        [sys.executable, "-c", CHILD.format(call=call), str(path), str(tmp_path / "out.parquet")],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("bomb", ["nuls", "endless"])
def test_every_reader_refuses_a_gzip_bomb_at_flat_memory(reader, bomb, bombs, tmp_path):
    outcome = run_reader(reader, bombs[bomb], tmp_path)
    line = 1 if bomb == "nuls" else 3
    assert refused_as_bomb(outcome["error"], bombs[bomb], line), outcome
    assert outcome["peak_mb"] < PEAK_LIMIT_MB, outcome


def test_a_long_line_in_a_plain_file_is_named_and_one_at_the_limit_is_read(tmp_path):
    from genderbias.files.collection import scan_collection
    from genderbias.files.queryfiles import read_queries
    from genderbias.files.runs import read_run

    at_limit = "x" * (MAX_LINE_BYTES - 3)  # "p2\t" + text: exactly the limit
    good = tmp_path / "good.tsv"
    good.write_text(f"p1\tone\r\np2\t{at_limit}\np3\tthree\n")
    assert scan_collection(good).passages == 3
    assert [qid for qid, _ in read_queries(good)] == ["p1", "p2", "p3"]

    bad = tmp_path / "bad.tsv"
    bad.write_text(f"p1\tone\np2\t{at_limit}x\np3\tthree\n")
    for read in (scan_collection, read_queries):
        with pytest.raises(InputError) as err:
            read(bad)
        assert str(err.value).startswith(f"{bad}:2: the line {PROBLEM}")

    run = tmp_path / "bad.trec"
    run.write_text("q1 Q0 d1 1 1.0 t\n" * 3 + "q1 Q0 d2 2 0.5 " + "t" * MAX_LINE_BYTES + "\n")
    with pytest.raises(InputError) as err:
        read_run(run)
    assert str(err.value).startswith(f"{run}:4: the line {PROBLEM}")


def test_open_text_streams_lines_across_its_reads(tmp_path, monkeypatch):
    """Small reads: lines, their numbers in errors and the byte-order mark survive the cuts."""
    import genderbias.files.textfiles

    monkeypatch.setattr(genderbias.files.textfiles, "READ_SIZE", 7)
    path = tmp_path / "q.tsv.gz"
    path.write_bytes(gzip.compress("\ufeffq1\tcafé\r\n\nq2\tnaïve query\nq3\tlast".encode()))
    with open_text(path) as lines:
        assert list(lines) == ["q1\tcafé", "", "q2\tnaïve query", "q3\tlast"]
    path.write_bytes(b"q1\tone\nq2\ttwo\nq3\tbad \xff byte\n")
    with pytest.raises(InputError) as err, open_text(path) as lines:
        list(lines)
    assert str(err.value) == f"{path}:3: invalid UTF-8 (byte 0xff)"


def test_the_gold_file_reader_refuses_a_bomb(bombs):
    from annotation.crowd.services.batches import read_gold_file

    with pytest.raises(InputError) as err:
        read_gold_file(bombs["nuls"])
    assert refused_as_bomb(str(err.value), bombs["nuls"], 1)


@pytest.mark.django_db
@pytest.mark.parametrize("command", ["import_collection", "import_queries", "import_run"])
def test_the_import_commands_refuse_a_bomb_naming_the_file(command, bombs, tmp_path):
    from pooling.models import Collection, QuerySet, Run

    if command == "import_run":
        collection = tmp_path / "c.tsv"
        collection.write_text("d1\tone\n")
        call_command("import_collection", str(collection), name="c", verbosity=0)
    options = {"collection": "c"} if command == "import_run" else {}
    with pytest.raises(CommandError) as err:
        call_command(command, str(bombs["nuls"]), name="bomb", verbosity=0, **options)
    assert refused_as_bomb(str(err.value), bombs["nuls"], 1)
    assert not Collection.objects.filter(name="bomb").exists()
    assert not QuerySet.objects.exists() and not Run.objects.exists()


@pytest.mark.django_db
def test_a_split_run_import_names_the_long_line_in_its_chunk(tmp_path):
    """``--chunks``: the long line falls in the second byte range; the error names the file's line."""
    from pooling.models import Run

    collection = tmp_path / "c.tsv"
    collection.write_text("".join(f"d{i}\tpassage {i}\n" for i in range(200)))
    call_command("import_collection", str(collection), name="c", verbosity=0)
    run = tmp_path / "r.trec"
    lines = [f"q{i // 100} Q0 d{i % 200} {i % 100 + 1} {1 / (i + 1)} t\n" for i in range(2000)]
    lines[1500] = "q15 Q0 d1 1 1.0 " + "t" * (2 * MAX_LINE_BYTES) + "\n"
    run.write_text("".join(lines))
    with pytest.raises(CommandError) as err:
        call_command("import_run", str(run), name="r", collection="c", chunks=2, verbosity=0)
    assert str(err.value).startswith(f"{run}:1501: the line {PROBLEM}")
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_an_uploaded_bomb_fails_its_import_job_with_the_problem(
    client, django_user_model, bombs, django_capture_on_commit_callbacks
):
    from core.models import Job

    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    upload = SimpleUploadedFile("bomb.tsv.gz", bombs["nuls"].read_bytes(), content_type="application/gzip")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/pooling/imports/collection/", {"name": "bomb", "file": upload})
    assert response.status_code == 202
    job = Job.objects.get(pk=response.json()["id"])
    assert job.status == Job.Status.FAILED
    assert "bomb.tsv.gz:1: " + BOMB in job.message  # a collection is read 16 MiB at a time

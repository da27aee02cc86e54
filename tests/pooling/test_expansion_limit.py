"""The one gzip reader (``genderbias.files.textfiles.GunzipStream``): decompressed in fixed-size blocks, a file
expanding more than ``IMPORT_MAX_EXPANSION_RATIO`` times its compressed size is refused while
it is read, every kind of file naming itself, the limit's setting and the line reached; a file
of blank lines is refused at its start (issue 44.1).

Limits are set small (settings overrides) so small files show what a 2 MB gzip expanding to
2 GiB does: the same refusal, after ``IMPORT_EXPANSION_FREE_BYTES`` expanded bytes.
"""

import gzip
import re
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from genderbias.errors import InputError
from genderbias.files.textfiles import EXPANSION, MAX_BLANK_LINES, GunzipStream, open_text

RATIO = "IMPORT_MAX_EXPANSION_RATIO"


def repeated(path: Path, line: str, times: int, head: str = "") -> Path:
    """``head`` then ``line`` ``times`` times, gzipped: one repeated line compresses ~100-1000x."""
    path.write_bytes(gzip.compress((head + line * times).encode(), compresslevel=9))
    return path


def refused_for_expansion(message: str, path: Path) -> int:
    """The line the refusal names (asserting it names the file and the setting)."""
    found = re.fullmatch(rf"{re.escape(str(path))}:(\d+): the gzip file expands more than 20 times .*", message)
    assert found, message
    assert RATIO in message and "past its first 2,000 bytes" in message, message
    return int(found.group(1))


@pytest.fixture
def small_limits(settings):
    settings.IMPORT_MAX_EXPANSION_RATIO = 20
    settings.IMPORT_EXPANSION_FREE_BYTES = 2000
    assert (EXPANSION.ratio, EXPANSION.free) == (20, 2000)
    return settings


def _read_labelled(path):
    from annotation.crowd.services.batches import read_labelled_file

    return read_labelled_file(path)


def _read_all(path):
    with open_text(path) as lines:
        return list(lines)


# Every kind of file: its reader and a line it would accept (10 ordinary lines lead, then repeats).
KINDS = {
    "collection": (
        lambda p: __import__("genderbias.files.collection").files.collection.scan_collection(p),
        "d{i}\tpassage {i}\n",
    ),
    "queries": (
        lambda p: __import__("genderbias.files.queryfiles").files.queryfiles.read_queries(p),
        "{i}\tquery {i}\n",
    ),
    "run": (lambda p: __import__("genderbias.files.runs").files.runs.read_run(p), "q1 Q0 d{i} {i} 1.0 t\n"),
    "qrels": (lambda p: __import__("genderbias.files.qrelfiles").files.qrelfiles.read_qrels(p), "q1 0 d{i} 1\n"),
    "wordlist": (lambda p: __import__("genderbias.text.wordlists").text.wordlists.load_wordlist(p), "word{i},f\n"),
    "labelled": (_read_labelled, "{i}\tquery {i}\tm\n"),
    "open_text": (_read_all, "line {i}\n"),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_of_file_is_refused_past_the_ratio_naming_file_setting_and_line(tmp_path, small_limits, kind):
    read, template = KINDS[kind]
    head = "".join(template.format(i=i) for i in range(1, 11))
    path = repeated(tmp_path / f"{kind}.gz", template.format(i=11), 5000, head)
    with pytest.raises(InputError) as err:
        read(path)
    line = refused_for_expansion(str(err.value), path)
    # Refused within its first blocks, not at the end: the line reached is far before line 5,010.
    assert 1 <= line < 1000


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_file_under_the_ratio_is_read_whole_and_one_under_the_free_bytes_too(tmp_path, small_limits, kind):
    read, template = KINDS[kind]
    lines = "".join(template.format(i=i) for i in range(1, 61))
    small = tmp_path / f"small-{kind}.gz"
    small.write_bytes(gzip.compress(lines[:1900].rsplit("\n", 1)[0].encode() + b"\n"))  # under 2,000 bytes
    read(small)
    small_limits.IMPORT_MAX_EXPANSION_RATIO = 10_000  # the repeated file of the test above, now past this limit
    try:  # read to its end, where its repeated ids (not its size) are what is wrong with it
        read(repeated(tmp_path / f"{kind}.gz", template.format(i=11), 5000, lines[:200].rsplit("\n", 1)[0] + "\n"))
    except InputError as exc:
        assert "expands" not in str(exc) and ("repeat" in str(exc) or "twice" in str(exc)), exc


def test_the_stream_decompresses_in_fixed_blocks_and_reads_concatenated_members(tmp_path):
    import io

    data = b"a\tb\n" * 100_000
    raw = io.BytesIO(gzip.compress(data[:200_000]) + gzip.compress(data[200_000:]) + b"\0" * 10)
    stream = GunzipStream(tmp_path / "x.gz", raw)
    pieces = []
    while piece := stream.read(1 << 20):
        assert len(piece) <= 64 * 1024  # never more than a block at once, whatever is asked
        pieces.append(piece)
    assert b"".join(pieces) == data


def test_a_truncated_and_a_corrupt_gzip_name_the_file(tmp_path):
    whole = gzip.compress(b"".join(b"q%d\tquery %d\n" % (i, i) for i in range(5000)))
    cut = tmp_path / "cut.tsv.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(InputError, match=r"cut\.tsv\.gz: the gzip file is truncated"):
        _read_all(cut)
    bad = tmp_path / "bad.tsv.gz"
    bad.write_bytes(whole[:20] + b"\xff" * 40 + whole[60:])
    with pytest.raises(InputError, match=r"bad\.tsv\.gz: the gzip file is corrupt"):
        _read_all(bad)


@pytest.mark.parametrize("gzipped", [False, True])
@pytest.mark.parametrize("kind", ["collection", "queries", "run", "open_text"])
def test_a_file_of_blank_lines_is_refused_where_they_begin(tmp_path, kind, gzipped):
    read, template = KINDS[kind]
    head = "".join(template.format(i=i) for i in range(1, 4))
    content = (head + "\n" * (MAX_BLANK_LINES + 5) + template.format(i=9)).encode()
    path = tmp_path / (f"{kind}.gz" if gzipped else kind)
    path.write_bytes(gzip.compress(content) if gzipped else content)
    with pytest.raises(InputError) as err:
        read(path)
    assert str(err.value) == (
        f"{path}:4: more than {MAX_BLANK_LINES:,} blank lines in a row (the limit of every reader): "
        "not a file of text lines"
    )


def test_blank_lines_split_across_blocks_are_counted_together_and_the_limit_itself_is_read(tmp_path, monkeypatch):
    import genderbias.files.textfiles

    monkeypatch.setattr(genderbias.files.textfiles, "READ_SIZE", 1000)  # the blank lines span many reads
    path = tmp_path / "q.tsv"
    path.write_text("1\tone\n" + "\n" * MAX_BLANK_LINES + "2\ttwo\n")
    assert _read_all(path)[-1] == "2\ttwo"
    path.write_text("1\tone\n" + "\r\n" * (MAX_BLANK_LINES + 1) + "2\ttwo\n")
    with pytest.raises(InputError, match=r"q\.tsv:\d+: more than 10,000 blank lines in a row"):
        _read_all(path)


@pytest.mark.django_db
@pytest.mark.parametrize("command", ["import_collection", "import_queries", "import_run"])
def test_the_import_commands_refuse_and_leave_nothing_behind(tmp_path, small_limits, command):
    from pooling.models import Collection, QuerySet, Run

    options = {}
    if command == "import_run":
        collection = tmp_path / "c.tsv"
        collection.write_text("".join(f"d{i}\tpassage\n" for i in range(1, 20)))
        call_command("import_collection", str(collection), name="c", verbosity=0)
        options = {"collection": "c"}
    template = {
        "import_collection": "d{i}\tpassage {i}\n",
        "import_queries": "{i}\tquery {i}\n",
        "import_run": "q1 Q0 d{i} {i} 1.0 t\n",
    }[command]
    path = repeated(tmp_path / "bomb.gz", template.format(i=11), 5000, template.format(i=1))
    with pytest.raises(CommandError) as err:
        call_command(command, str(path), name="bomb", verbosity=0, **options)
    refused_for_expansion(str(err.value), path)
    assert not Collection.objects.filter(name="bomb").exists()
    assert not QuerySet.objects.exists() and not Run.objects.exists()


@pytest.mark.django_db
def test_an_uploaded_bomb_fails_its_job_naming_the_file_and_leaves_no_run(
    client, django_user_model, tmp_path, small_limits, django_capture_on_commit_callbacks
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from core.models import Job
    from pooling.models import Run

    collection = tmp_path / "c.tsv"
    collection.write_text("".join(f"d{i}\tpassage\n" for i in range(1, 20)))
    call_command("import_collection", str(collection), name="c", verbosity=0)
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    bomb = repeated(tmp_path / "run.trec.gz", "q1 Q0 d11 1 1.0 t\n", 5000)
    upload = SimpleUploadedFile("run.trec.gz", bomb.read_bytes(), content_type="application/gzip")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/pooling/imports/run/", {"name": "bomb", "collection": "c", "file": upload})
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.json()["id"])
    assert job.status == Job.Status.FAILED
    assert "run.trec.gz:1: the gzip file expands more than 20 times" in job.message, job.message
    assert RATIO in job.message
    assert not Run.objects.exists()

"""One rule for decompressed input: every reader stops at its expanded-size limit with the
same ``file:line: problem`` (issue 27, "What to build"; ``genderbias.files.textfiles.InputLimit``).

Limits are set small (settings overrides) so small files show what huge ones would do.
"""

import gzip
import tracemalloc

import pytest
from django.core.management import CommandError, call_command

from genderbias.errors import InputError
from genderbias.files.collection import scan_collection
from genderbias.files.qrelfiles import read_qrels
from genderbias.files.queryfiles import read_queries
from genderbias.files.runs import read_run
from genderbias.files.textfiles import DECOMPRESSED, HELD, HELD_LINE_BYTES, open_text
from genderbias.text.wordlists import load_wordlist
from pooling.models import QuerySet


def gz(path, text: str):
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.write(text)
    return path


def message(path, line, limit, setting, files):
    size = f"expands to more than {limit:,} bytes"
    if setting == "IMPORT_MAX_HELD_BYTES":  # a held line counts its bytes and the objects it becomes
        size = f"holds more than {limit:,} bytes once read (each line's bytes and 384 for the objects it becomes)"
    return f"{path}:{line}: the file {size}, the limit for {files} (setting {setting}); reading stopped here"


HELD_FILES = "query, qrels, word-list and labelled files (read whole into memory)"

# Each held reader with a file of 10-byte lines (100 lines, 1,000 bytes expanded).
HELD_READERS = {
    "queries": (read_queries, "{i:03d}\tquery\n"),  # 3 + 1 + 5 + 1
    "qrels": (read_qrels, "{i:03d} 0 d 1\n"),
    "wordlist": (load_wordlist, "word{i:03d},f\n"),
    "open_text": (lambda p: read_all(p), "{i:09d}\n"),
}


def read_all(path) -> list[str]:
    with open_text(path) as lines:
        return list(lines)


@pytest.mark.parametrize("reader", sorted(HELD_READERS))
@pytest.mark.parametrize("gzipped", [True, False])
def test_held_readers_stop_at_the_held_limit_naming_the_line(tmp_path, settings, reader, gzipped):
    read, line = HELD_READERS[reader]
    text = "".join(line.format(i=i) for i in range(100))
    assert len(text) == 1000
    path = tmp_path / ("f.txt.gz" if gzipped else "f.txt")
    if gzipped:
        gz(path, text)
    else:
        path.write_text(text)
    assert HELD_LINE_BYTES == 384  # docs/deployment.md: a held line counts its bytes and 384
    settings.IMPORT_MAX_HELD_BYTES = 2000  # 394 a line: lines 1-5 count 1,970, line 6 takes it to 2,364
    assert HELD.bytes == 2000
    with pytest.raises(InputError) as err:
        read(path)
    assert str(err.value) == message(path, 6, 2000, "IMPORT_MAX_HELD_BYTES", HELD_FILES)
    settings.IMPORT_MAX_HELD_BYTES = 100 * 394  # exactly the file: read
    read(path)


STREAMED_FILES = "collections and runs"


def test_runs_and_collections_stop_at_the_decompressed_limit(tmp_path, settings):
    run = gz(tmp_path / "r.trec.gz", "".join(f"q1 Q0 d{i:03d} {i + 1} {100 - i} t\n" for i in range(100)))
    collection = gz(tmp_path / "c.tsv.gz", "".join(f"d{i:03d}\tpassage{i:03d}\n" for i in range(100)))  # 16 bytes
    settings.IMPORT_MAX_DECOMPRESSED_BYTES = 100
    assert DECOMPRESSED.bytes == 100
    with pytest.raises(InputError) as err:
        scan_collection(collection)
    assert str(err.value) == message(collection, 7, 100, "IMPORT_MAX_DECOMPRESSED_BYTES", STREAMED_FILES)
    with pytest.raises(InputError, match=r"r\.trec\.gz:\d+: the file expands to more than 100 bytes"):
        read_run(run)
    settings.IMPORT_MAX_DECOMPRESSED_BYTES = 10_000
    assert scan_collection(collection).passages == 100
    assert len(read_run(run).frame) == 100


def test_a_range_of_a_plain_run_counts_from_where_the_range_starts(tmp_path, settings):
    from genderbias.files.blocks import byte_ranges, line_numbers_at
    from genderbias.files.runs import parse_run_lines

    run = tmp_path / "r.trec"
    run.write_text("".join(f"q1 Q0 d{i:03d} 1 {100 - i:03d} t\n" for i in range(100)))  # 19 bytes a line
    settings.IMPORT_MAX_DECOMPRESSED_BYTES = 1000
    ranges = byte_ranges(run, 4)
    firsts = line_numbers_at(run, [start for start, _ in ranges])
    assert firsts == [1, 26, 51, 76]
    assert len(parse_run_lines(run, "trec", byte_range=ranges[0], first_line=firsts[0])) == 25
    with pytest.raises(InputError) as err:  # the range holding the file's 1,001st byte
        parse_run_lines(run, "trec", byte_range=ranges[2], first_line=firsts[2])
    assert err.value.line == 1000 // 19 + 1
    with pytest.raises(InputError) as err:  # a range wholly past the limit: refused at its first line
        parse_run_lines(run, "trec", byte_range=ranges[3], first_line=firsts[3])
    assert err.value.line == 76


def test_the_import_command_reports_the_limit(tmp_path, settings):
    path = gz(tmp_path / "q.tsv.gz", "".join(f"{i:03d}\tquery\n" for i in range(100)))
    settings.IMPORT_MAX_HELD_BYTES = 1000  # 10 + 384 a line: line 3 takes the count past 1,000
    with pytest.raises(CommandError, match=r"q\.tsv\.gz:3: the file holds more than 1,000 bytes once read"):
        call_command("import_queries", str(path), "--name", "qs")


def write_short_queries(path, budget: int, per_line: int = 0) -> int:
    """Short query lines while their bytes (and ``per_line`` each) stay within ``budget``; returns how many."""
    count = lines = 0
    with open(path, "w") as out:
        while count + len(line := f"{lines}\twhat is thing {lines}\n") + per_line <= budget:
            out.write(line)
            count, lines = count + len(line) + per_line, lines + 1
    return lines


@pytest.mark.django_db
def test_an_import_of_short_lines_holds_what_the_held_limit_says(tmp_path, settings):
    """Issue 82: IMPORT_MAX_HELD_BYTES of short query lines cost a worker 17 times the setting. A file
    whose bytes fit is now refused when its lines would hold more; one that fits its count imports
    holding (Python's own allocations, tracemalloc) less than the setting."""
    from pooling import services

    settings.IMPORT_MAX_HELD_BYTES = limit = 32 * 1024**2
    write_short_queries(tmp_path / "bytes.tsv", limit)  # 32 MiB of 30-byte lines: over a million queries
    with pytest.raises(InputError, match=r"bytes\.tsv:\d+: the file holds more than 33,554,432 bytes once read"):
        services.import_queries(tmp_path / "bytes.tsv", "bytes")
    lines = write_short_queries(tmp_path / "fits.tsv", limit, per_line=384)
    tracemalloc.start()
    try:
        services.import_queries(tmp_path / "fits.tsv", "fits")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert QuerySet.objects.get(name="fits").queries.count() == lines
    assert peak < limit, peak


def test_a_held_block_with_a_character_past_u_ffff_counts_its_bytes_four_times(tmp_path, settings):
    """Python holds a line with one emoji 4 bytes a character (issue 82: 3.8 times the setting before this count)."""
    path = tmp_path / "q.tsv"
    path.write_text("".join(f"{i:03d}\tquery \U0001f600\n" for i in range(10)), encoding="utf-8")  # 15 bytes a line
    settings.IMPORT_MAX_HELD_BYTES = 10 * (15 + 384)  # the bytes counted once would fit
    with pytest.raises(InputError) as err:
        read_queries(path)
    assert err.value.line == 9  # 4 * 15 + 384 = 444 a line: line 9 takes the count from 3,552 to 3,996
    settings.IMPORT_MAX_HELD_BYTES = 10 * 444
    assert len(read_queries(path)) == 10

"""One rule for decompressed input: every reader stops at its expanded-size limit with the
same ``file:line: problem`` (issue 27, "What to build"; ``genderbias.files.textfiles.InputLimit``).

Limits are set small (settings overrides) so small files show what huge ones would do.
"""

import gzip

import pytest
from django.core.management import CommandError, call_command

from genderbias.errors import InputError
from genderbias.files.collection import scan_collection
from genderbias.files.runs import read_run
from genderbias.files.textfiles import DECOMPRESSED, HELD, open_text
from genderbias.text.wordlists import load_wordlist
from pooling.qrelfiles import read_qrels
from pooling.queryfiles import read_queries


def gz(path, text: str):
    with gzip.open(path, "wt", encoding="utf-8") as out:
        out.write(text)
    return path


def message(path, line, limit, setting, files):
    return (
        f"{path}:{line}: the file expands to more than {limit:,} bytes, the limit for {files} "
        f"(setting {setting}); reading stopped here"
    )


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
    settings.IMPORT_MAX_HELD_BYTES = 555  # byte 556 (offset 555) is on line 56
    assert HELD.bytes == 555
    with pytest.raises(InputError) as err:
        read(path)
    assert str(err.value) == message(path, 56, 555, "IMPORT_MAX_HELD_BYTES", HELD_FILES)
    settings.IMPORT_MAX_HELD_BYTES = 1000  # exactly the file: read
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
    settings.IMPORT_MAX_HELD_BYTES = 500
    with pytest.raises(CommandError, match=r"q\.tsv\.gz:51: the file expands to more than 500 bytes"):
        call_command("import_queries", str(path), "--name", "qs")

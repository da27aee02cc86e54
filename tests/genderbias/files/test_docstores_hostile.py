"""MS MARCO v2 bundle files as an attacker gives them (issue 82): a bundle without line breaks, and a
symbolic link in the folder to a file outside it. The expected refusals are the readers' documented
limits (``MAX_LINE_BYTES``: 1 MiB a line, as every reader) and the regular-files-only rule."""

import gzip
import json
import os
import random
import string
import tracemalloc

import pytest

from genderbias.errors import InputError
from genderbias.files.docstores import V2PassageFiles

START = b'{"pid": "msmarco_passage_00_0", "passage": "'


def test_a_newline_free_sparse_bundle_of_400_mb_is_refused_at_its_first_mebibyte(tmp_path):
    """The issue's input: a JSON-ish start, then 400 MB of nothing (sparse, no disk) and no line break."""
    folder = tmp_path / "v2"
    folder.mkdir()
    with open(folder / "msmarco_passage_00", "wb") as f:
        f.write(START)
        f.truncate(400 * 2**20)
    files = V2PassageFiles(folder)
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as caught:
            files.get_many(["msmarco_passage_00_0"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(caught.value) == (
        f"{folder / 'msmarco_passage_00'}: byte 0 (passage msmarco_passage_00_0): the line is longer than "
        "1,048,576 bytes (the limit of every reader): this is not a file of text lines, or its line breaks are missing"
    )
    assert peak < 8 * 2**20  # the line read is at most 1 MiB; the whole file would be 400 MiB


def test_a_gzipped_bundle_with_a_line_over_the_limit_is_refused_naming_its_offset(tmp_path):
    folder = tmp_path / "v2"
    folder.mkdir()
    first = json.dumps({"pid": "msmarco_passage_00_0", "passage": "short"}).encode() + b"\n"
    rng = random.Random(3)  # letters compress about 1.3 times: no compression bomb, only a long line
    endless = "".join(rng.choices(string.ascii_letters, k=3 * 2**20)).encode()
    with gzip.open(folder / "msmarco_passage_00.gz", "wb") as f:
        f.write(first + b'{"pid": "x", "passage": "' + endless)
    files = V2PassageFiles(folder)
    assert files.get_many(["msmarco_passage_00_0"]) == {"msmarco_passage_00_0": "short"}
    wanted = f"msmarco_passage_00_{len(first) + 5_000_000}"  # past the long line: it must be read through
    with pytest.raises(
        InputError, match=rf"msmarco_passage_00.gz: byte {len(first)}: the line is longer than 1,048,576"
    ):
        files.get_many([wanted])


@pytest.fixture
def outside(tmp_path):
    """A file outside the bundles' folder standing for /etc/passwd."""
    secret = tmp_path / "passwd"
    secret.write_text(json.dumps({"pid": "msmarco_passage_01_0", "passage": "root:x:0:0:root:/root:/bin/bash"}) + "\n")
    return secret


def test_a_link_to_a_file_outside_the_folder_is_refused_when_listed_and_when_swapped_in_later(tmp_path, outside):
    folder = tmp_path / "v2"
    folder.mkdir()
    line = json.dumps({"pid": "msmarco_passage_01_0", "passage": "a passage of the folder"}) + "\n"
    (folder / "msmarco_passage_01").write_text(line)
    (folder / "msmarco_passage_02").symlink_to(outside)
    with pytest.raises(InputError, match=r"msmarco_passage_02: not a regular file with one name"):
        V2PassageFiles(folder)
    (folder / "msmarco_passage_02").unlink()
    files = V2PassageFiles(folder)
    fingerprint = files.fingerprint()
    bundle = folder / "msmarco_passage_01"
    os.replace(bundle, tmp_path / "moved")
    bundle.symlink_to(outside)  # after the listing (a registration): the link is refused when opened
    with pytest.raises(InputError, match=r"msmarco_passage_01: a symbolic link \(not followed\)"):
        files.get_many(["msmarco_passage_01_0"])
    with pytest.raises(InputError, match="a symbolic link"):
        files.fingerprint()
    bundle.unlink()
    os.link(outside, bundle)  # a hard link: a second name of the outside file
    with pytest.raises(InputError, match=r"a hard link \(2 names\)"):
        files.get_many(["msmarco_passage_01_0"])
    bundle.unlink()
    os.replace(tmp_path / "moved", bundle)
    assert files.fingerprint() == fingerprint
    assert files.get_many(["msmarco_passage_01_0"]) == {"msmarco_passage_01_0": "a passage of the folder"}


def test_a_linked_pos_file_tells_nothing_of_its_target(tmp_path, outside):
    folder = tmp_path / "v2"
    folder.mkdir()
    (folder / "msmarco_passage_00").write_text(json.dumps({"pid": "msmarco_passage_00_0", "passage": "p"}) + "\n")
    (folder / "msmarco_passage_00.pos").symlink_to(outside)
    with pytest.raises(InputError, match=r"msmarco_passage_00.pos: not a regular file"):
        V2PassageFiles(folder)

"""A run line with a negative rank is refused with its file and line, by both run readers (the
columnar one for regular files, the block parser for the rest): ``rank -1`` was imported (issue 68).
Rank 0 stays: some systems count from 0, and trec_eval orders by score, not by rank."""

from __future__ import annotations

import gzip

import pytest

from genderbias.errors import InputError
from genderbias.files.runs import read_run


@pytest.mark.parametrize("compressed", [False, True], ids=["columnar", "block"])
@pytest.mark.parametrize(("run_format", "line"), [("trec", "q1 Q0 d2 -1 0.5 t"), ("msmarco", "q1 d2 -1")])
def test_a_negative_rank_is_refused_naming_the_line(tmp_path, compressed, run_format, line):
    first = "q1 Q0 d1 1 0.9 t" if run_format == "trec" else "q1 d1 1"
    text = f"{first}\n{line}\n"
    path = tmp_path / ("r.trec.gz" if compressed else "r.trec")
    path.write_bytes(gzip.compress(text.encode()) if compressed else text.encode())
    with pytest.raises(InputError) as raised:
        read_run(path, run_format=run_format)
    assert str(raised.value) == f"{path}:2: rank '-1' is negative"


def test_rank_zero_is_read(tmp_path):
    path = tmp_path / "r.trec"
    path.write_text("q1 Q0 d1 0 0.9 t\nq1 Q0 d2 1 0.5 t\n")
    assert read_run(path).frame["docid"].to_list() == ["d1", "d2"]

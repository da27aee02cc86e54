"""A small world: a collection, a query set and two runs, written to files and imported."""

import pytest
from django.core.management import call_command

from tests.support.kept_state import kept

PASSAGES = {
    "d1": "She and her sister",  # f=3 (she, her, sister), m=0
    "d2": "He met his father",  # m=3
    "d3": "nothing gendered here",
    "d4": "the man and the woman",  # f=1, m=1
}
QUERIES = {"1": "who is she", "2": "what is a synapse", "3": "who is he"}
RUN_A = {"1": ["d1", "d3"], "2": ["d3", "d4"], "3": ["d2", "d1"]}
RUN_B = {"1": ["d3", "d1"], "2": ["d2"], "3": ["d4", "d3"]}


def write_run(path, rankings):
    lines = []
    for qid, docs in rankings.items():
        for rank, doc in enumerate(docs, start=1):
            lines.append(f"{qid} Q0 {doc} {rank} {10 - rank} tag\n")
    path.write_text("".join(lines))
    return path


def _files(tmp_path):
    collection = tmp_path / "collection.tsv"
    collection.write_text("".join(f"{pid}\t{text}\n" for pid, text in PASSAGES.items()))
    queries = tmp_path / "queries.tsv"
    queries.write_text("".join(f"{qid}\t{text}\n" for qid, text in QUERIES.items()))
    return {
        "collection": collection,
        "queries": queries,
        "run_a": write_run(tmp_path / "a.trec", RUN_A),
        "run_b": write_run(tmp_path / "b.trec", RUN_B),
    }


@pytest.fixture
def files(tmp_path):
    return _files(tmp_path)


def _world(folder):
    files = _files(folder)
    call_command("import_collection", str(files["collection"]), name="tiny", verbosity=0)
    call_command("import_queries", str(files["queries"]), name="q", verbosity=0)
    call_command("import_run", str(files["run_a"]), name="a", collection="tiny", verbosity=0)
    call_command("import_run", str(files["run_b"]), name="b", collection="tiny", verbosity=0)
    return files


#: Built once per module, each test in a savepoint of it (tests/support/kept_state.py).
_kept_world, world = kept("world", _world)


@pytest.fixture
def own_world(db, tmp_path):
    """The world built for one test, in its own folder: for a test that changes or removes the files."""
    return _world(tmp_path)

"""The collection's docid index kept between ``import_run`` commands (``<sha256>.known.parquet``).

A user imports seven runs with seven commands; each used to hash and sort the collection's
docids again. The sorted index is now kept beside the docid index, for that collection's
content only: a run imported in the next process checks its docids against it, and a
collection whose content changed gets its own.
"""

from pathlib import Path

import pytest
from django.core.management import call_command

from genderbias.errors import InputError
from genderbias.files.known_docids import known_index_source, load_known_index
from pooling import selectors, services
from pooling.models import Collection, Run
from pooling.services.runs import known_index_path

from .conftest import RUN_A, write_run


@pytest.fixture
def imported(db, files):
    call_command("import_collection", str(files["collection"]), name="tiny", verbosity=0)
    call_command("import_run", str(files["run_a"]), name="a", collection="tiny", verbosity=0)
    return Collection.objects.get(name="tiny")


def test_the_first_run_keeps_the_index_and_the_next_import_uses_it(imported, files, monkeypatch):
    saved = known_index_path(imported)
    assert saved.exists() and saved.parent == Path(imported.docid_index).parent

    def not_again(collection):
        raise AssertionError("the collection's docids were read again")

    monkeypatch.setattr("pooling.services.runs.collection_docids", not_again)
    call_command("import_run", str(files["run_b"]), name="b", collection="tiny", verbosity=0)
    assert Run.objects.get(name="b").rows == 5
    assert len(selectors.run_frame(Run.objects.get(name="b"))) == 5


def test_a_run_with_an_unknown_docid_is_still_refused_with_the_saved_index(imported, tmp_path):
    bad = write_run(tmp_path / "bad.trec", {**RUN_A, "2": ["d3", "nowhere"]})
    with pytest.raises(InputError, match="'nowhere' is not in the collection"):
        services.import_run(bad, "bad", imported)


def test_another_collections_index_in_its_place_is_rebuilt(imported, files, tmp_path):
    """A foreign file where this collection's index should be (copied, or left by other content)
    is not trusted: the run is checked against this collection's own docids, and the file rewritten."""
    other_file = tmp_path / "other.tsv"
    other_file.write_text("x1\tonly other passages\nx2\there\n")
    other = services.import_collection(other_file, "other", bar=False).obj
    services.import_run(write_run(tmp_path / "o.trec", {"1": ["x1", "x2"]}), "o", other)
    saved = known_index_path(imported)
    saved.write_bytes(known_index_path(other).read_bytes())
    result = services.import_run(files["run_b"], "b", imported)
    assert result.created and result.obj.rows == 5
    with pytest.raises(InputError, match="'d1' is not in the collection"):
        services.import_run(write_run(tmp_path / "x.trec", {"1": ["x1", "d1"]}), "x", other)
    stat = Path(imported.docid_index).stat()
    source = (
        f"collection sha256 {imported.sha256}, {imported.passages} passages; "
        f"docid index {stat.st_size} bytes, modified {stat.st_mtime_ns}"
    )
    assert load_known_index(saved, known_index_source(source), imported.passages) is not None


def test_a_rebuilt_docid_index_is_not_paired_with_the_old_saved_one(imported, files, tmp_path):
    """The saved index is derived from the docid index: when that is rebuilt (the cache
    cleared), the saved one, made from the old file, is not used."""
    saved = known_index_path(imported)
    before = saved.stat().st_mtime_ns
    Path(imported.docid_index).unlink()
    services.import_run(files["run_b"], "b", imported)  # rebuilds the docid index, then checks against it
    assert Path(imported.docid_index).exists()
    services.import_run(write_run(tmp_path / "c.trec", {"1": ["d2"]}), "c", imported)  # rewrites the saved one
    assert saved.stat().st_mtime_ns != before


def test_a_changed_collection_gets_its_own_index(imported, files, tmp_path):
    changed = tmp_path / "changed.tsv"
    changed.write_text(files["collection"].read_text().replace("d4\t", "d5\t"))
    new = services.import_collection(changed, "changed", bar=False).obj
    assert new.sha256 != imported.sha256
    assert known_index_path(new) != known_index_path(imported)
    with pytest.raises(InputError, match="'d4' is not in the collection"):
        services.import_run(files["run_a"], "a2", new)  # run A ranks d4 for query 2

"""A Zenodo deposit (issue 54, item 5) against a local server that follows Zenodo's API documentation
(tests/publishing/zenodo_server.py), over real HTTP: the metadata publish_dataset and
paper write, the upload of every file (the server's MD5s against the folder's, computed here),
the reserved DOI, publishing only when asked, and retries that never make a second deposition:
401, 429 throttling, 500s, and answers lost after the server acted."""

from __future__ import annotations

import hashlib
import io
import json
import os

import pytest
from django.core.management import CommandError, call_command

from core.errors import ServiceError
from publishing.services.dataset import publish_dataset
from publishing.services.deposits import zenodo_deposit
from publishing.zenodo.deposit import STATE
from tests.publishing.test_dataset_folder import _kept_annotated, annotated  # noqa: F401 (fixture)
from tests.publishing.zenodo_server import PREFIX, FakeZenodo, serve

pytestmark = pytest.mark.django_db
PAPER_DOI = "10.1145/3397271.3401280"


@pytest.fixture
def zenodo(monkeypatch):
    fake = FakeZenodo()
    server = serve(fake)
    monkeypatch.setenv("ZENODO_API_URL", f"{server.base}/api/")
    monkeypatch.setenv("ZENODO_TOKEN", fake.token)
    yield fake
    server.shutdown()


@pytest.fixture
def folder(annotated, tmp_path):  # noqa: F811
    out = tmp_path / "gq-dataset"
    publish_dataset(annotated, out, "cc-by-4.0", paper=f"https://doi.org/{PAPER_DOI}")
    return out


def _fill_creators(folder) -> dict:
    path = folder / ".zenodo.json"
    metadata = json.loads(path.read_text())
    metadata["creators"] = [{"name": "Doe, Jane", "affiliation": "A University"}]
    path.write_text(json.dumps(metadata))
    return metadata


def _deposited(fake: FakeZenodo, ident: int) -> dict[str, str]:
    bucket = fake.depositions[ident]["bucket"]
    return {name: hashlib.md5(data).hexdigest() for name, data in fake.buckets[bucket].items()}


def _folder_files(folder) -> dict[str, str]:
    """What a reader of the dataset needs: its files, named here (the hidden ones are bookkeeping)."""
    names = {"queries.parquet", "non_gendered.parquet", "aggregated.parquet", "README.md", "croissant.json",
             "CITATION.cff"}  # fmt: skip
    assert {p.name for p in folder.iterdir() if not p.name.startswith(".")} == names
    return {name: hashlib.md5((folder / name).read_bytes()).hexdigest() for name in names}


def test_the_dataset_metadata_names_the_paper_licence_and_method(folder):
    metadata = json.loads((folder / ".zenodo.json").read_text())
    assert metadata["upload_type"] == "dataset" and metadata["license"] == "cc-by-4.0"
    assert metadata["version"] == "1.0.0" and "gender bias" in metadata["keywords"]
    assert {"identifier": PAPER_DOI, "relation": "isSupplementTo", "scheme": "doi",
            "resource_type": "publication-article"} in metadata["related_identifiers"]  # fmt: skip
    assert metadata["title"] and metadata["description"] and metadata["creators"]


def test_the_placeholder_authors_are_refused_before_any_request(folder, zenodo):
    with pytest.raises(CommandError, match=r"\.zenodo\.json: fill in the creators"):
        call_command("zenodo_deposit", str(folder), stdout=io.StringIO())
    assert zenodo.requests == []


def test_a_bad_token_is_zenodos_401_and_nothing_is_created(folder, zenodo, monkeypatch):
    _fill_creators(folder)
    monkeypatch.setenv("ZENODO_TOKEN", "not-the-token")
    with pytest.raises(CommandError, match="HTTP 401"):
        call_command("zenodo_deposit", str(folder), "--yes", stdout=io.StringIO())
    assert zenodo.depositions == {}


def test_a_draft_with_its_reserved_doi_then_published_only_when_asked(folder, zenodo):
    metadata = _fill_creators(folder)
    out = io.StringIO()
    call_command("zenodo_deposit", str(folder), "--yes", stdout=out)
    [ident] = zenodo.depositions
    deposition = zenodo.depositions[ident]
    assert not deposition["submitted"]  # a draft: not published unless asked
    assert f"reserved DOI {PREFIX}/zenodo.{ident}" in out.getvalue()
    assert _deposited(zenodo, ident) == _folder_files(folder)  # every file, byte for byte
    for key in ("title", "creators", "license", "related_identifiers", "keywords", "version", "upload_type"):
        assert deposition["metadata"][key] == metadata[key]
    assert "deposit key" not in str(deposition["metadata"].get("notes"))  # the creation's marker is gone

    out = io.StringIO()
    call_command("zenodo_deposit", str(folder), "--publish", "--yes", stdout=out)
    assert list(zenodo.depositions) == [ident] and zenodo.depositions[ident]["submitted"]
    assert f"Published on Zenodo: DOI {PREFIX}/zenodo.{ident}" in out.getvalue()
    puts = [path for method, path in zenodo.requests if method == "PUT" and path.startswith("/api/files/")]
    assert len(puts) == len(_folder_files(folder))  # the rerun sent no file again (same MD5s)


def test_throttling_and_server_errors_are_retried_without_a_second_deposition(folder, zenodo):
    _fill_creators(folder)
    zenodo.script = {"POST /api/deposit/depositions": ["throttle"], "PUT /api/files/": ["throttle", "error"]}
    sleeps: list[float] = []
    done = zenodo_deposit(folder, sleep=sleeps.append)
    assert len(zenodo.depositions) == 1 and done.doi == f"{PREFIX}/zenodo.{done.id}"
    assert len(sleeps) == 3  # one back-off per refusal
    assert _deposited(zenodo, done.id) == _folder_files(folder)


def test_a_lost_answer_to_the_creation_finds_the_draft_instead_of_making_another(folder, zenodo):
    _fill_creators(folder)
    zenodo.script = {"POST /api/deposit/depositions": ["lose"]}
    done = zenodo_deposit(folder, sleep=lambda s: None)
    assert len(zenodo.depositions) == 1 and done.id in zenodo.depositions
    assert _deposited(zenodo, done.id) == _folder_files(folder)


def test_a_run_that_failed_midway_resumes_the_recorded_deposition(folder, zenodo):
    _fill_creators(folder)
    zenodo.script = {"PUT /api/files/": ["error"] * 6}  # past the client's retries: the run fails
    with pytest.raises(ServiceError, match="500"):
        zenodo_deposit(folder, sleep=lambda s: None)
    recorded = json.loads((folder / STATE).read_text())
    assert list(zenodo.depositions) == [recorded["id"]]  # recorded before the upload
    done = zenodo_deposit(folder, publish=True, sleep=lambda s: None)
    assert done.resumed and done.id == recorded["id"] and list(zenodo.depositions) == [recorded["id"]]
    assert done.published and _deposited(zenodo, done.id) == _folder_files(folder)


def test_a_lost_answer_to_publishing_is_read_back(folder, zenodo):
    _fill_creators(folder)
    zenodo.script = {"POST /api/deposit/depositions/": ["lose"]}  # the publish action
    done = zenodo_deposit(folder, publish=True, sleep=lambda s: None)
    assert done.published and zenodo.depositions[done.id]["submitted"] and len(zenodo.depositions) == 1


def test_the_paper_bundles_metadata_points_at_the_dataset():
    from publishing.zenodo.metadata import zenodo_metadata

    metadata = zenodo_metadata(
        upload_type="publication", publication_type="other", title="t", description="d", published="2026-11-25",
        method_doi=PAPER_DOI, dataset="10.5281/zenodo.1234",
    )  # fmt: skip
    assert {"identifier": "10.5281/zenodo.1234", "relation": "isSupplementedBy", "scheme": "doi",
            "resource_type": "dataset"} in metadata["related_identifiers"]  # fmt: skip
    with pytest.raises(ValueError, match="not a DOI or an http"):
        zenodo_metadata(
            upload_type="dataset", title="t", description="d", published="2026", method_doi=PAPER_DOI, paper="nonsense"
        )


def test_the_connection_test_reads_the_token_as_zenodo_does(zenodo, monkeypatch):
    from core.services.connections import CHECKS, ConnectionTestFailed

    assert "token accepted" in CHECKS["zenodo"]()
    assert zenodo.requests == [("GET", "/api/deposit/depositions")]  # a read: nothing created
    monkeypatch.setenv("ZENODO_TOKEN", "not-the-token")
    with pytest.raises(ConnectionTestFailed, match="401"):
        CHECKS["zenodo"]()


# --- issue 68: a deposit sends only what it means ---------------------------------------------


@pytest.mark.parametrize("name", ["README.txt#x", "b?x=1.txt", "with space.txt", "100%.txt", "é.txt"])
def test_a_file_name_is_percent_encoded_in_the_bucket_url(folder, zenodo, name):
    """``README.txt#x`` was uploaded as ``README.txt`` (the rest read as a fragment) and ``b?x=1.txt``
    became a query string: each name is now one percent-encoded path segment, stored under its own name."""
    _fill_creators(folder)
    (folder / name).write_bytes(b"odd name " + name.encode())
    done = zenodo_deposit(folder, sleep=lambda s: None)
    stored = _deposited(zenodo, done.id)
    assert stored[name] == hashlib.md5(b"odd name " + name.encode()).hexdigest()
    assert set(stored) == {*_folder_files_with(folder, name)}


def _folder_files_with(folder, name: str) -> set[str]:
    return {p.name for p in folder.iterdir() if not p.name.startswith(".")} | {name}


@pytest.mark.parametrize(("name", "why"), [("back\\slash.txt", "backslash"), ("tab\there.txt", "control character")])
def test_a_name_zenodo_would_refuse_is_refused_before_any_request(folder, zenodo, name, why):
    _fill_creators(folder)
    (folder / name).write_bytes(b"x")
    with pytest.raises(ServiceError, match=why):
        zenodo_deposit(folder, sleep=lambda s: None)
    assert zenodo.requests == []


def test_a_hard_link_or_a_symlink_is_refused_before_any_request(folder, zenodo, tmp_path):
    """A hard link to the site's database in the folder was uploaded (its bytes are the database's):
    only regular files with a single link are sent; a symbolic link is refused as well, not skipped."""
    _fill_creators(folder)
    secret = tmp_path / "db.sqlite3"
    secret.write_bytes(b"every group's data")
    os.link(secret, folder / "innocent.bin")
    with pytest.raises(ServiceError, match=r"innocent\.bin: a hard link"):
        zenodo_deposit(folder, sleep=lambda s: None)
    (folder / "innocent.bin").unlink()
    (folder / "pointer.bin").symlink_to(secret)
    with pytest.raises(ServiceError, match=r"pointer\.bin: a symbolic link"):
        zenodo_deposit(folder, sleep=lambda s: None)
    assert zenodo.requests == []


def test_the_command_lists_the_files_and_uploads_only_when_confirmed(folder, zenodo, monkeypatch):
    _fill_creators(folder)
    asked = []
    monkeypatch.setattr("builtins.input", lambda prompt="": asked.append(prompt) or "n")
    out = io.StringIO()
    with pytest.raises(CommandError, match="nothing was sent"):
        call_command("zenodo_deposit", str(folder), stdout=out)
    assert asked and zenodo.requests == []
    for name in _folder_files(folder):
        assert f"  {name}" in out.getvalue()
    monkeypatch.setattr("builtins.input", lambda prompt="": "y")
    call_command("zenodo_deposit", str(folder), stdout=io.StringIO())
    [ident] = zenodo.depositions
    assert _deposited(zenodo, ident) == _folder_files(folder)


def test_an_error_text_that_echoes_the_token_is_masked(folder, zenodo):
    _fill_creators(folder)
    zenodo.script["POST /api/deposit/depositions"] = ["echo"]
    with pytest.raises(ServiceError) as raised:
        zenodo_deposit(folder, sleep=lambda s: None)
    assert "HTTP 400" in str(raised.value) and "…" in str(raised.value)
    assert zenodo.token not in str(raised.value) and zenodo.token[:8] not in str(raised.value)

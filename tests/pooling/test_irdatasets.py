"""Importing by dataset id through ir_datasets: a tiny dataset registered the way the package
documents it (``ir_datasets.registry.register`` of a ``Dataset`` of ``TsvDocs``,
``TsvQueries`` and ``TrecQrels`` over local files), and one whose download points at a port
nothing listens on (127.0.0.1:1), as on a machine without internet."""

from importlib.util import find_spec

import pytest
from django.core.management import CommandError, call_command

from core.errors import ServiceError
from core.models import Job
from pooling import services
from pooling.models import Collection, Qrels, QuerySet

# Not importorskip: importing ir_datasets makes folders under IR_DATASETS_HOME (see ``registered``).
pytestmark = pytest.mark.skipif(find_spec("ir_datasets") is None, reason="ir_datasets is not installed")

TINY = "project-test/tiny"
QUERIES_ONLY = "project-test/queries-only"
OFFLINE = "project-test/offline"
#: An id whose last segment is a word of the messages ("ir_datasets could not download …"): never rewritten.
WORDY = "project-test/dataset"
COUNTED = "project-test/counted"
DOCS = {"p1": "She and her sister", "p2": "He met his father", "p3": "nothing gendered here"}
QUERIES = {"1": "who is she", "2": "who is he"}
QRELS = [("1", "p1", 1), ("1", "p3", 0), ("2", "p2", 2)]


@pytest.fixture(scope="session")
def registered(tmp_path_factory):
    """Register the test datasets once (the registry refuses a name twice). ir_datasets makes
    folders under IR_DATASETS_HOME when first imported: a temporary one, never ~/.ir_datasets."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("IR_DATASETS_HOME", str(tmp_path_factory.mktemp("ir_datasets_home")))
        return _register(tmp_path_factory)


def _register(tmp_path_factory):
    import ir_datasets
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import TrecQrels, TsvDocs, TsvQueries
    from ir_datasets.util import Download, LocalDownload, RequestsDownload

    folder = tmp_path_factory.mktemp("tiny-dataset")
    docs = folder / "docs.tsv"
    docs.write_text("".join(f"{pid}\t{text}\n" for pid, text in DOCS.items()))
    queries = folder / "queries.tsv"
    queries.write_text("".join(f"{qid}\t{text}\n" for qid, text in QUERIES.items()))
    qrels = folder / "qrels.txt"
    qrels.write_text("".join(f"{qid} 0 {pid} {rel}\n" for qid, pid, rel in QRELS))
    levels = {0: "not relevant", 1: "relevant", 2: "highly relevant"}

    class CountedDocs(TsvDocs):
        """Documents whose number the dataset states (as MS MARCO's metadata does), without reading them."""

        def docs_count(self):
            return len(DOCS)

    offline = Download([RequestsDownload("http://127.0.0.1:1/collection.tsv")], cache_path=str(folder / "never.tsv"))
    datasets = {
        TINY: Dataset(
            TsvDocs(LocalDownload(docs)), TsvQueries(LocalDownload(queries)), TrecQrels(LocalDownload(qrels), levels)
        ),
        QUERIES_ONLY: Dataset(TsvQueries(LocalDownload(queries))),
        OFFLINE: Dataset(TsvDocs(offline), TsvQueries(LocalDownload(queries))),
        WORDY: Dataset(TsvDocs(offline), TsvQueries(LocalDownload(queries))),
        COUNTED: Dataset(CountedDocs(LocalDownload(docs)), TsvQueries(LocalDownload(queries))),
    }
    known = set(ir_datasets.registry)
    for name, dataset in datasets.items():
        if name not in known:
            ir_datasets.registry.register(name, dataset)
    return datasets


@pytest.fixture(autouse=True)
def ir_home(tmp_path, monkeypatch):
    home = tmp_path / "ir_datasets_home"
    monkeypatch.setenv("IR_DATASETS_HOME", str(home))
    monkeypatch.setenv("IR_DATASETS_DL_TRIES", "1")
    monkeypatch.setenv("IR_DATASETS_DL_DISABLE_PBAR", "true")
    return home


@pytest.mark.django_db
def test_a_dataset_is_imported_end_to_end_with_its_id_and_version(registered, settings, capsys):
    import ir_datasets

    call_command("import_dataset", TINY, name="tiny-ds")
    out = capsys.readouterr().out
    source = f"ir_datasets:{TINY} (ir_datasets {ir_datasets.__version__})"
    assert "Imported: project-test/tiny" in out and "3 passages" in out and "3 judgments" in out

    collection = Collection.objects.get(name="tiny-ds")
    assert collection.passages == 3 and collection.source == source
    assert collection.path.startswith(str(settings.CACHE_DIR))  # written under the cache, registered there
    with open(collection.path, encoding="utf-8") as handle:
        assert handle.read() == "p1\tShe and her sister\np2\tHe met his father\np3\tnothing gendered here\n"

    query_set = QuerySet.objects.get(name="tiny-ds")
    assert query_set.origin == QuerySet.Origin.IMPORTED and query_set.source == source
    assert source in query_set.description
    assert list(query_set.queries.values_list("qid", "text")) == list(QUERIES.items())

    qrels = Qrels.objects.get(name="tiny-ds")
    assert (qrels.collection, qrels.query_set) == (collection, query_set)
    assert (qrels.judgments, qrels.queries, qrels.relevant) == (3, 2, 2)
    assert sorted(services.qrels_frame(qrels).select("qid", "docid", "rel").rows()) == sorted(QRELS)

    # Again: nothing changes (every part found already imported).
    result = services.import_dataset(TINY, "tiny-ds", bar=False)
    assert not result.created and result.counts()["lines_read"] is None
    assert Collection.objects.count() == QuerySet.objects.count() == Qrels.objects.count() == 1


def test_texts_become_one_line_each():
    from pooling.irdatasets import _clean

    assert _clean(" He met\this\r\nfather ") == "He met his father"


@pytest.mark.django_db
def test_a_part_the_dataset_lacks_is_left_out(registered):
    result = services.import_dataset(QUERIES_ONLY, "only-q", bar=False)
    assert result.created and result.obj.collection is None and result.obj.qrels is None
    assert QuerySet.objects.get(name="only-q").queries.count() == 2
    assert not Collection.objects.exists() and not Qrels.objects.exists()
    assert "the dataset has no documents" in result.notes


@pytest.mark.django_db
def test_offline_the_error_says_so_without_a_traceback(registered, settings):
    with pytest.raises(CommandError) as caught:
        call_command("import_dataset", OFFLINE, name="off")
    message = str(caught.value)
    assert message.startswith(f"ir_datasets could not download {OFFLINE}: ")
    assert "127.0.0.1" in message and "Traceback" not in message
    assert message.endswith(
        "this machine may be offline — download it on a connected machine and copy ~/.ir_datasets, "
        "or set IR_DATASETS_HOME"
    )
    assert not Collection.objects.exists() and not QuerySet.objects.exists()
    assert not any(p.is_file() for p in (settings.CACHE_DIR / "datasets").rglob("*"))  # no half-written file

    with pytest.raises(ServiceError, match="could not download"):
        services.import_dataset(OFFLINE, "off", bar=False)
    with pytest.raises(CommandError, match="has no dataset 'project-test/nonesuch'"):
        call_command("import_dataset", "project-test/nonesuch", name="none")
    with pytest.raises(CommandError, match="not an ir_datasets id"):
        call_command("import_dataset", "../etc", name="none")


@pytest.mark.django_db
def test_api_and_page_start_the_import_job(registered, admin_client, django_capture_on_commit_callbacks):
    url = "/api/pooling/imports/dataset/"
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(url, {"name": "tiny-api", "dataset": TINY}, content_type="application/json")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["kind"] == "import" and body["description"] == f"Import dataset tiny-api from {TINY}"
    job = Job.objects.get(pk=body["id"])
    assert job.status == Job.Status.DONE, job.message
    assert job.message.startswith("Imported: dataset tiny-api; 8 lines read, 8 imported")  # 3 + 2 + 3
    assert Qrels.objects.get(name="tiny-api").judgments == 3

    assert (
        admin_client.post(url, {"name": "x", "dataset": "a/../b"}, content_type="application/json").status_code == 400
    )
    assert "dataset" in admin_client.post(url, {"name": "x"}, content_type="application/json").json()

    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(url, {"name": "off", "dataset": OFFLINE}, content_type="application/json")
    job = Job.objects.get(pk=response.json()["id"])
    assert job.status == Job.Status.FAILED and "could not download" in job.message and "offline" in job.message

    page = admin_client.get("/pooling/import/dataset/")
    assert page.status_code == 200 and b'name="dataset"' in page.content and b'name="file"' not in page.content
    assert b"/pooling/import/dataset/" in admin_client.get("/pooling/import/").content
    assert admin_client.post("/pooling/import/dataset/preview/").status_code == 404


@pytest.mark.django_db
def test_the_dataset_is_named_on_the_home_page_and_in_the_dataset_card(registered, admin_client):
    from types import SimpleNamespace

    from annotation.exports.selectors import source_of as _source

    result = services.import_dataset(TINY, "tiny-home", bar=False)
    source = result.obj.collection.source
    assert source.startswith(f"ir_datasets:{TINY} (ir_datasets ")
    assert source.encode() in admin_client.get("/").content  # collections' Source column

    query_set = result.obj.query_set
    assert query_set.dataset_source == source
    assert _source(SimpleNamespace(pool=None, query_set=query_set)) == f"tiny-home (queries from {source})"
    plain = QuerySet(name="plain", source="/data/q.tsv")
    assert plain.dataset_source == "" and _source(SimpleNamespace(pool=None, query_set=plain)) == "plain"


@pytest.mark.django_db
def test_an_id_ir_datasets_does_not_know_is_refused_before_a_job_is_made(
    registered, admin_client, django_capture_on_commit_callbacks
):
    """Issue 82's input: ``nosuch/dataset`` once made a job (202) whose failure message read
    ``dataset: ir_datasets … has no nosuch/dataset 'nosuch/dataset'``; now every door refuses it
    first, naming the field and the id, and makes no job."""
    import ir_datasets

    said = f"ir_datasets {ir_datasets.__version__} has no dataset 'nosuch/dataset' (the ids are listed at https://ir-datasets.com)"
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            "/api/pooling/imports/dataset/", {"name": "x", "dataset": "nosuch/dataset"}, content_type="application/json"
        )
    assert response.status_code == 400 and response.json() == {"dataset": [said]}
    page = admin_client.post("/pooling/import/dataset/", {"name": "x", "dataset": "nosuch/dataset"})
    assert page.status_code == 400 and page.context["form"].errors == {"dataset": [said]}
    with pytest.raises(CommandError) as caught:
        call_command("import_dataset", "nosuch/dataset", name="x")
    assert str(caught.value) == f"dataset: {said}"
    with pytest.raises(ServiceError, match="has no dataset 'nosuch/dataset'"):
        services.start_import("dataset", "nosuch/dataset", "x", {})
    assert not Job.objects.exists() and not QuerySet.objects.exists() and not Collection.objects.exists()


@pytest.mark.django_db
def test_a_jobs_message_keeps_the_words_of_an_id_whose_last_segment_is_one(
    registered, admin_client, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            "/api/pooling/imports/dataset/", {"name": "wordy", "dataset": WORDY}, content_type="application/json"
        )
    job = Job.objects.get(pk=response.json()["id"])
    assert job.status == Job.Status.FAILED
    assert job.message.startswith(f"ir_datasets could not download {WORDY}: "), job.message
    assert job.message.endswith("copy ~/.ir_datasets, or set IR_DATASETS_HOME"), job.message


@pytest.mark.django_db
def test_by_reference_the_counts_say_no_document_was_read(
    registered, admin_client, django_capture_on_commit_callbacks, capsys
):
    """The documents of a dataset by reference are registered, not read: the 3 passages of ``COUNTED``
    are known from what the dataset states, and only its 2 queries are lines read (issue 82: MS MARCO
    v2 by reference reported its 138M passages as lines read)."""
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            "/api/pooling/imports/dataset/",
            {"name": "held", "dataset": COUNTED, "by_reference": True},
            content_type="application/json",
        )
    job = Job.objects.get(pk=response.json()["id"])
    assert job.status == Job.Status.DONE, job.message
    assert Collection.objects.get(name="held").by_reference
    counts = {k: job.result[k] for k in ("lines_read", "imported", "skipped", "by_reference")}
    assert counts == {"lines_read": 2, "imported": 2, "skipped": 0, "by_reference": 3}
    assert job.message.startswith(
        "Imported: dataset held; passages registered by reference: 3 known from the collection's metadata, 0 read "
        "(each is read by id when a pool or a report asks for it); 2 lines read, 2 imported, 0 skipped"
    ), job.message

    call_command("import_dataset", COUNTED, name="held2", by_reference=True)
    out = capsys.readouterr().out
    assert "collection 'held2' (by reference: 3 passages known from its metadata, read by id" in out, out

    # A dataset that does not state its number of documents: none claimed, none read.
    result = services.import_dataset(TINY, "held3", by_reference=True, bar=False)
    assert result.counts() == {"lines_read": 5, "imported": 5, "skipped": 0, "by_reference": None}
    assert result.outcome().startswith("passages registered by reference: their number unknown, 0 read")

"""Collections by reference: MS MARCO v2's own bundle files and an ir_datasets docstore, read by docid.

The expected figures come from the other path: the same passages written as a ``pid<TAB>passage``
file and imported with the full scan, pooled and reported the same way. The texts read are counted
where they are read (the docstore's ``get_many``), and the report's checksum is computed here from
the passages' own text.
"""

import hashlib
import json
from importlib.util import find_spec
from io import StringIO

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from core.errors import ServiceError
from genderbias.files.docstores import V2PassageFiles
from metrics.models import Report
from metrics.services.report_settings import ReportSettings
from metrics.services.reports import build_report
from pooling import services
from pooling.models import Collection, PoolEntry, QuerySet, Run
from pooling.synthetic import write_v2_bundles

RUNS, QUERIES, DEPTH = 3, 12, 10


def bundle_passages(folder):
    """Every ``pid -> passage`` of the bundles, read line by line here (not through the code under test)."""
    passages = {}
    for path in sorted(folder.glob("msmarco_passage_*")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            passages[record["pid"]] = record["passage"]
    return passages


def write_run(path, rankings, tag):
    path.write_text(
        "".join(
            f"{qid} Q0 {doc} {rank} {100 - rank} {tag}\n"
            for qid, docs in rankings.items()
            for rank, doc in enumerate(docs, start=1)
        )
    )
    return path


@pytest.fixture
def v2_files(tmp_path):
    """2 bundles × 1,000 passages in v2's layout, the same passages as a TSV file, queries and runs."""
    folder = write_v2_bundles(tmp_path / "v2", 2_000, bundles=2, texts=500)
    passages = bundle_passages(folder)
    tsv = tmp_path / "flat.tsv"
    tsv.write_text("".join(f"{pid}\t{text}\n" for pid, text in passages.items()), encoding="utf-8")
    queries = tmp_path / "queries.tsv"
    queries.write_text("".join(f"{q}\twhat is thing {q}\n" for q in range(1, QUERIES + 1)))
    rng = np.random.default_rng(5)
    ids = sorted(passages)
    runs = []
    for r in range(RUNS):
        rankings = {str(q): list(rng.choice(ids, DEPTH, replace=False)) for q in range(1, QUERIES + 1)}
        runs.append(write_run(tmp_path / f"run{r}.trec", rankings, f"run{r}"))
    return {"folder": folder, "tsv": tsv, "queries": queries, "runs": runs, "passages": passages}


@pytest.fixture
def reads(monkeypatch):
    """Every docid the v2 bundles are asked for, in order."""
    asked = []
    original = V2PassageFiles.get_many

    def counted(self, ids):
        ids = list(ids)
        asked.extend(ids)
        return original(self, ids)

    monkeypatch.setattr(V2PassageFiles, "get_many", counted)
    return asked


def figures(collection_name, run_names, queries):
    runs = [Run.objects.get(name=name) for name in run_names]
    pool = services.build_pool(f"pool-{collection_name}", queries, runs, bar=False)
    entries = sorted(
        (e.query.qid, run_names.index(e.run.name), e.rank_bias, e.female_position, e.male_position)
        for e in PoolEntry.objects.filter(pool=pool).select_related("query", "run")
    )
    report = build_report(
        f"report-{collection_name}", queries, runs, ReportSettings(cutoffs=(5, 10), bootstrap_samples=200), bar=False
    )
    results = sorted(
        (run_names.index(r.run.name), r.metric, r.variant, r.cutoff, r.value, r.queries) for r in report.results.all()
    )
    return entries, results, report


@pytest.mark.django_db
def test_v2_by_reference_gives_the_full_scan_figures_reading_only_what_the_runs_rank(
    v2_files, reads, settings, client, admin_user
):
    settings.CACHE_DIR = str(v2_files["folder"].parent / "cache")
    call_command("import_collection", str(v2_files["tsv"]), name="flat", verbosity=0)
    call_command("import_collection", str(v2_files["folder"]), name="v2", by_reference=True, verbosity=0)
    call_command("import_queries", str(v2_files["queries"]), name="q", verbosity=0)
    v2 = Collection.objects.get(name="v2")
    assert v2.kind == Collection.Kind.MSMARCO_V2 and v2.passages is None and reads == []  # nothing read to register
    flat_names, v2_names = [], []
    for i, path in enumerate(v2_files["runs"]):
        services.import_run(path, f"flat{i}", Collection.objects.get(name="flat"))
        services.import_run(path, f"v2-{i}", v2)
        flat_names.append(f"flat{i}")
        v2_names.append(f"v2-{i}")
    queries = QuerySet.objects.get(name="q")

    flat = figures("flat", flat_names, queries)
    by_reference = figures("v2", v2_names, queries)

    assert by_reference[0] == flat[0] and len(flat[0]) > 0  # the pool: every entry, RaB and position
    assert by_reference[1] == flat[1] and len(flat[1]) > 0  # the report: every figure
    ranked = {doc for path in v2_files["runs"] for doc in (line.split()[2] for line in path.read_text().splitlines())}
    assert set(reads) == ranked  # exactly the passages the runs rank (depth = the largest cutoff)
    assert len(reads) == len(ranked)  # each read once: then from the texts cache
    assert len(ranked) < len(v2_files["passages"]) / 2
    lines = sorted(f"{doc}\t{hashlib.sha256(v2_files['passages'][doc].encode()).hexdigest()[:32]}" for doc in ranked)
    report = by_reference[2]
    assert report.texts_sha256 == hashlib.sha256(("\n".join(lines) + "\n").encode()).hexdigest()
    assert report.texts_read == len(ranked)
    client.force_login(admin_user)
    body = client.get(f"/api/metrics/reports/{report.name}/").json()
    assert body["texts_sha256"] == report.texts_sha256 and body["texts_read"] == len(ranked)
    assert report.texts_sha256 in client.get(f"/metrics/{report.name}/").content.decode()
    assert Report.objects.get(name="report-flat").texts_sha256 == ""  # a file's sha256 pins its texts


@pytest.mark.django_db
def test_a_v2_run_naming_no_passage_is_refused_and_a_rewritten_bundle_is_found(v2_files, settings, tmp_path):
    settings.CACHE_DIR = str(tmp_path / "cache")
    v2 = services.register_collection_by_reference(v2_files["folder"], "v2", kind="msmarco-v2").obj
    again = services.register_collection_by_reference(v2_files["folder"], "v2", kind="msmarco-v2")
    assert not again.created and again.obj == v2
    bad = write_run(tmp_path / "bad.trec", {"1": ["msmarco_passage_00_0", "msmarco_passage_07_0"]}, "bad")
    with pytest.raises(CommandError, match=r"bad.trec:2: .*msmarco_passage_07_0"):
        call_command("import_run", str(bad), name="bad", collection="v2", verbosity=0)
    off_line = write_run(tmp_path / "off.trec", {"1": ["msmarco_passage_00_3"]}, "off")  # inside a line
    run = services.import_run(off_line, "off", v2).obj
    with pytest.raises(Exception, match=r"msmarco_passage_00: byte 3"):
        services.texts_checksum(v2, ["msmarco_passage_00_3"])
    bundle = v2_files["folder"] / "msmarco_passage_01"
    bundle.write_bytes(bundle.read_bytes()[:-10])
    with pytest.raises(ServiceError, match="changed since it was registered"):
        services.texts_checksum(v2, ["msmarco_passage_01_0"])
    assert run.rows == 1


@pytest.mark.skipif(find_spec("ir_datasets") is None, reason="ir_datasets is not installed")
@pytest.mark.django_db
def test_an_ir_datasets_docstore_by_reference_gives_the_written_out_figures(tmp_path, monkeypatch, settings):
    """A dataset registered in ir_datasets' own way (``TsvDocs`` over a local file: its docstore reads by
    id), imported written out and by reference: the same pool, and the by-reference one writes no documents."""
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "ir_home"))
    import ir_datasets
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import TsvDocs, TsvQueries
    from ir_datasets.util import LocalDownload

    settings.CACHE_DIR = str(tmp_path / "cache")
    docs = {"p1": "She and her sister", "p2": "He met his father", "p3": "nothing here", "p4": "the man, the woman"}
    (tmp_path / "docs.tsv").write_text("".join(f"{k}\t{v}\n" for k, v in docs.items()))
    (tmp_path / "queries.tsv").write_text("1\twho is she\n2\twho is he\n")
    name = "project-test/by-reference"
    if name not in ir_datasets.registry:
        ir_datasets.registry.register(
            name,
            Dataset(TsvDocs(LocalDownload(tmp_path / "docs.tsv")), TsvQueries(LocalDownload(tmp_path / "queries.tsv"))),
        )
    run = write_run(tmp_path / "r.trec", {"1": ["p1", "p3"], "2": ["p2", "p4"]}, "r")
    call_command("import_dataset", name, name="held", by_reference=True, verbosity=0)
    held = Collection.objects.get(name="held")
    assert held.kind == Collection.Kind.IR_DATASETS and held.path == name
    assert not list((tmp_path / "cache" / "datasets").rglob("docs.tsv"))  # no document written out
    call_command("import_dataset", name, name="written", verbosity=0)
    assert len(list((tmp_path / "cache" / "datasets").rglob("docs.tsv"))) == 1
    values = {}
    for collection in ("written", "held"):
        services.import_run(run, f"r-{collection}", Collection.objects.get(name=collection))
        pool = services.build_pool(
            f"p-{collection}",
            QuerySet.objects.get(name=collection),
            [Run.objects.get(name=f"r-{collection}")],
            bar=False,
        )
        values[collection] = sorted((e.query.qid, e.rank_bias) for e in pool.entries.select_related("query"))
    assert values["held"] == values["written"] and len(values["held"]) == 2
    with pytest.raises(ServiceError, match="has no passage p9"):
        services.texts_checksum(held, ["p1", "p9"])


@pytest.mark.django_db
def test_the_api_registers_a_v2_folder_by_reference_and_refuses_an_upload(
    client, admin_user, v2_files, settings, django_capture_on_commit_callbacks
):
    client.force_login(admin_user)
    settings.IMPORT_ROOTS = [str(v2_files["folder"].parent)]
    url = "/api/pooling/imports/collection/"
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            url, {"name": "v2", "path": str(v2_files["folder"]), "by_reference": True}, content_type="application/json"
        )
    assert response.status_code == 202
    collection = Collection.objects.get(name="v2")
    assert collection.kind == Collection.Kind.MSMARCO_V2 and collection.path == str(v2_files["folder"])
    from django.urls import reverse

    for page in ("/", reverse("pooling:import")):  # the collections listed, their passages unknown
        shown = client.get(page)
        assert shown.status_code == 200 and "by reference" in shown.content.decode()
    response = client.post(
        url, {"name": "v2b", "path": str(v2_files["tsv"]), "by_reference": True}, content_type="application/json"
    )
    assert response.status_code == 400 and "is not a folder" in response.json()["path"][0]
    response = client.post(url, {"name": "v2c", "path": str(v2_files["folder"])}, content_type="application/json")
    assert response.status_code == 400 and "is not a file" in response.json()["path"][0]


@pytest.mark.django_db
def test_texts_read_over_celery_workers_split_by_bundle_file(v2_files, settings, tmp_path, monkeypatch):
    """Eager Celery here: each chunk is one bundle's docids, and the texts are those of the bundles."""
    settings.CACHE_DIR = str(tmp_path / "cache")
    calls = []
    original = V2PassageFiles.get_many
    monkeypatch.setattr(
        V2PassageFiles, "get_many", lambda self, ids: calls.append(list(ids)) or original(self, calls[-1])
    )
    v2 = services.register_collection_by_reference(v2_files["folder"], "v2", kind="msmarco-v2").obj
    asked = sorted(v2_files["passages"])[::7]
    texts = services.texts_by_reference(v2, asked, chunks=2)
    assert dict(texts.iter_rows()) == {doc: v2_files["passages"][doc] for doc in asked}
    assert len(calls) == 2 and {len({doc.split("_")[2] for doc in call}) for call in calls} == {1}
    assert sorted(doc for call in calls for doc in call) == asked
    again = services.texts_by_reference(v2, asked, chunks=2)  # from the texts cache: nothing read
    assert len(calls) == 2 and again.sort("docid").equals(texts.sort("docid"))
    with pytest.raises(ServiceError, match=r"msmarco_passage_00: byte 1 \(passage msmarco_passage_00_1\)"):
        services.texts_by_reference(v2, ["msmarco_passage_00_1"], chunks=2)  # inside a line
    with pytest.raises(ServiceError, match="has no passage msmarco_passage_01_999999999"):
        services.texts_by_reference(v2, ["msmarco_passage_01_999999999"], chunks=2)  # past the bundle's end


@pytest.mark.django_db
def test_a_v2_folder_by_reference_reports_its_passages_known_and_none_read(
    client, admin_user, v2_files, settings, django_capture_on_commit_callbacks
):
    """Issue 82: MS MARCO v2 registered by reference reported its 138M passages (its ``.pos`` files' sizes)
    as lines read and imported. Here its 2,000 passages (counted from the bundles' lines, here) are
    known from the ``.pos`` files ir_datasets writes (4 bytes a passage), and none is read."""
    from core.models import Job

    for bundle in sorted(v2_files["folder"].glob("msmarco_passage_??")):
        lines = len(bundle.read_text(encoding="utf-8").splitlines())
        (bundle.parent / f"{bundle.name}.pos").write_bytes(b"\0" * (4 * lines))
    client.force_login(admin_user)
    settings.IMPORT_ROOTS = [str(v2_files["folder"].parent)]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/api/pooling/imports/collection/",
            {"name": "v2", "path": str(v2_files["folder"]), "by_reference": True},
            content_type="application/json",
        )
    job = Job.objects.get(pk=response.json()["id"])
    assert job.status == Job.Status.DONE, job.message
    assert Collection.objects.get(name="v2").passages == len(v2_files["passages"]) == 2_000
    counts = {k: job.result[k] for k in ("lines_read", "imported", "skipped", "by_reference")}
    assert counts == {"lines_read": 0, "imported": 0, "skipped": 0, "by_reference": 2_000}
    assert job.message == (
        "Imported: collection v2; passages registered by reference: 2,000 known from the collection's metadata, "
        "0 read (each is read by id when a pool or a report asks for it)"
    )


@pytest.mark.django_db
def test_import_collection_by_reference_says_no_passage_was_read(tmp_path):
    """Issue 82: ``import_collection --by-reference`` printed a v2 folder's metadata as ``138,364,198 passages``
    as if they were read. Its ``.pos`` files (4 bytes a passage, sparse here: MS MARCO v2's count, 138,364,198)
    are all it reads; the output says that number is the metadata's and that 0 passages were read."""
    folder = write_v2_bundles(tmp_path / "v2", 20, bundles=2, texts=10)
    for bundle in ("00", "01"):
        with open(folder / f"msmarco_passage_{bundle}.pos", "wb") as f:
            f.truncate(4 * 69_182_099)
    out = StringIO()
    call_command("import_collection", str(folder), name="v2", by_reference=True, stdout=out, verbosity=0)
    v2 = Collection.objects.get(name="v2")
    assert out.getvalue() == (
        "Imported: collection 'v2': passages registered by reference: 138,364,198 known from the collection's "
        f"metadata, 0 read (each is read by id when a pool or a report asks for it), {v2.size:,} bytes, "
        f"sha256 {v2.sha256[:12]}…\n"
    )
    again = StringIO()
    call_command("import_collection", str(folder), name="v2", by_reference=True, stdout=again, verbosity=0)
    assert again.getvalue().startswith("Already imported (unchanged): collection 'v2': by reference, 0 passages read")

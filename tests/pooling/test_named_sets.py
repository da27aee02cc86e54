"""The field's data sets imported by name (``manage.py import_named_set``), compared with the
reference files (../shared/reference) read here independently: pandas for the CSV and TSV files,
plain line scans for where the known faults are."""

import io
import socket
from pathlib import Path

import pandas as pd
import pytest
from django.core.management import CommandError, call_command

from genderbias.datasets import DATA_DIR, NAMED_SETS
from pooling.models import Collection, Qrels, QuerySet


@pytest.fixture
def offline(monkeypatch):
    """No network: any attempt to connect fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("a named set's import tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def run(*args) -> str:
    out = io.StringIO()
    call_command("import_named_set", *args, stdout=out)
    return out.getvalue()


def lines_holding(path: Path, text: str) -> list[int]:
    """The 1-based numbers of the physical lines of ``path`` holding ``text``."""
    return [n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1) if text in line]


@pytest.mark.django_db
def test_grep_biasir_imports_everything_offline(reference_dir, offline):
    out = run("grep-biasir")
    folder = reference_dir / "grep-biasir"
    queries = pd.read_csv(folder / "queries.csv", dtype=str)
    documents = pd.concat(
        [pd.read_csv(path, dtype=str) for path in sorted(folder.glob("queries-documents_*.csv"))], ignore_index=True
    )
    query_set = QuerySet.objects.get(name="grep-biasir")
    stored = {q.qid: (q.text, q.categories) for q in query_set.queries.all()}
    assert stored == {r.q_id: (r.query, r.category) for r in queries.itertuples()}
    assert len(stored) == 117
    collection = Collection.objects.get(name="grep-biasir")
    assert collection.passages == len(documents) == 702
    texts = dict(line.split("\t", 1) for line in Path(collection.path).read_text(encoding="utf-8").splitlines())
    for row in documents.itertuples():
        assert texts[row.d_id] == f"{row.doc_title} {row.document}".replace("\n", " ").strip()
    qrels = Qrels.objects.get(name="grep-biasir")
    assert (qrels.judgments, qrels.relevant, qrels.queries) == (702, int((documents.relevant == "1").sum()), 117)

    assert query_set.licence == "CC0-1.0" and "krieg2023grep" in query_set.citation
    assert query_set.source.startswith("named-set:grep-biasir") and "ed44a46" in query_set.source
    assert query_set.dataset_source == query_set.source and collection.dataset_source.startswith("named-set:")
    # Each fault named with its file and line, found here by a plain scan of the file.
    sex = folder / "queries-documents_Sex & Relationship.csv"
    botrh = lines_holding(sex, ",botrh,")
    both = lines_holding(sex, ",both,")
    assert len(botrh) == 1 and len(both) == 4
    for number in botrh:
        assert f"queries-documents_Sex & Relationship.csv:{number}: content_gender 'botrh' (a typo" in out
    for number in both:
        assert f"queries-documents_Sex & Relationship.csv:{number}: content_gender 'both' is not F, M or N" in out
    assert "licence CC0-1.0" in out

    again = run("grep-biasir")
    assert "Already imported (unchanged)" in again
    assert QuerySet.objects.filter(name="grep-biasir").count() == 1


def _canonical(category: str) -> str:
    """The categories as the dataset's README defines them (independent of the product's table)."""
    known = ["Career", "Education", "Social Inequality", "Health", "Politics", "Violence and Exploitation"]
    fixed = {"social inequaltiy": "Social Inequality"}
    value = category.strip()
    return next((k for k in known if k.lower() == value.lower()), fixed.get(value.lower(), value))


@pytest.mark.django_db
def test_cpjku_msmarco_queries_with_categories_and_what_is_missing(reference_dir, offline):
    out = run("cpjku-msmarco")
    path = reference_dir / "cpjku-fair" / "msmarco_passage.dev.fair.FULL_ANNOTATION.tsv"
    table = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    expected = {}
    for row in table.itertuples():
        cats = list(dict.fromkeys(_canonical(c) for c in row.Categories.split(",") if c.strip()))
        expected[row.QID] = (row.Query.strip(), "; ".join(cats))
    query_set = QuerySet.objects.get(name="cpjku-msmarco")
    assert {q.qid: (q.text, q.categories) for q in query_set.queries.all()} == expected
    assert len(expected) == 215
    # the 215 are the QS2 set of the plain file
    plain = pd.read_csv(reference_dir / "msmarco_passage.dev.fair.tsv", sep="\t", header=None, dtype=str)
    assert set(plain[0]) == set(expected)
    assert query_set.licence == "MIT" and "rekabsaz2021" in query_set.citation

    name = path.name
    categories = {n: line.split("\t")[2] for n, line in enumerate(path.read_text().splitlines(), 1) if n > 1}
    for typo, times in (("Social Inequaltiy", 3), ("career", 1), ("Violence and exploitation", 2)):
        found = [n for n, cell in categories.items() if typo in [c.strip() for c in cell.split(",")]]
        assert len(found) == times
        for number in found:
            assert f"{name}:{number}: category '{typo}' read as" in out
    empty = [n for n, cell in categories.items() if cell == ""]
    assert len(empty) == 3
    for number in empty:
        assert f"{name}:{number}: query " in out and "has no category" in out
    (comma,) = lines_holding(path, "Health (status, access)")
    assert f"{name}:{comma}: Domains 'Health (status, access)'" in out
    assert "not imported: the MS MARCO passage collection" in out and "--collection" in out
    assert not Collection.objects.exists()


@pytest.mark.django_db
def test_cpjku_trecdl_has_the_queries_of_the_plain_file(reference_dir):
    run("cpjku-trecdl")
    plain = pd.read_csv(reference_dir / "cpjku-fair" / "trecdeep19_passage.fair.tsv", sep="\t", header=None, dtype=str)
    stored = dict(QuerySet.objects.get(name="cpjku-trecdl").queries.values_list("qid", "text"))
    assert stored == dict(zip(plain[0], plain[1].str.strip(), strict=True))
    assert len(stored) == NAMED_SETS["cpjku-trecdl"].queries == 30  # the files hold 30, not 29


@pytest.mark.django_db
def test_rekabsaz_3750_with_the_study_labels(reference_dir):
    run("rekabsaz-3750", "--name", "study-3750")
    expected = {}
    for line in (reference_dir / "queries_gender_annotated.csv").read_text(encoding="utf-8").splitlines():
        qid, rest = line.split(",", 1)
        text, label = rest.rsplit(",", 1)
        expected[qid] = (text.strip(), label.strip())
    query_set = QuerySet.objects.get(name="study-3750")
    assert dict((q, (t, lab)) for q, t, lab in query_set.queries.values_list("qid", "text", "label")) == expected
    assert len(expected) == 3750 and query_set.licence == "MIT"


@pytest.mark.django_db
def test_user_collection_and_qrels_beside_an_msmarco_set(tmp_path):
    plain = pd.read_csv(DATA_DIR / "cpjku-fair" / "trecdeep19_passage.fair.FULL_ANNOTATION.tsv", sep="\t", dtype=str)
    qid = plain.QID.iloc[0]
    collection = tmp_path / "passages.tsv"
    collection.write_text("p1\tthe nurse and her patient\np2\tthe doctor and his patient\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(f"{qid} 0 p1 1\n{qid} 0 p2 0\n")
    out = run("cpjku-trecdl", "--collection", str(collection), "--qrels", str(qrels))
    assert Collection.objects.get(name="cpjku-trecdl").passages == 2
    assert Qrels.objects.get(name="cpjku-trecdl").judgments == 2
    assert "not imported" not in out
    # A collection already registered is taken by its name.
    run("cpjku-msmarco", "--collection", "cpjku-trecdl")
    assert Collection.objects.count() == 1


@pytest.mark.django_db
def test_refusals_name_what_is_wrong(tmp_path):
    with pytest.raises(CommandError, match="invalid choice"):
        run("grep-bias")
    with pytest.raises(CommandError, match="collection: Grep-BiasIR brings its own"):
        run("grep-biasir", "--collection", str(tmp_path / "x.tsv"))
    with pytest.raises(CommandError, match="qrels: judgments need the collection"):
        run("cpjku-msmarco", "--qrels", str(tmp_path / "q.txt"))
    with pytest.raises(CommandError, match="no such file, and no collection registered"):
        run("cpjku-msmarco", "--collection", str(tmp_path / "absent.tsv"))


@pytest.fixture
def staff(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    return client


@pytest.mark.slow
@pytest.mark.django_db
def test_named_sets_page_imports_a_set_as_a_job(staff, reference_dir, django_capture_on_commit_callbacks):
    from core.models import Job

    page = staff.get("/pooling/named-sets/").content.decode()
    for key, named in NAMED_SETS.items():
        assert f'id="set-{key}"' in page and named.licence in page
    assert 'href="/pooling/named-sets/"' in page  # in the navigation
    refused = staff.post("/pooling/named-sets/", {"set": "cpjku-msmarco", "qrels": "/nowhere/qrels.txt"})
    assert refused.status_code == 400
    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post("/pooling/named-sets/", {"set": "grep-biasir"})
    job = Job.objects.get(kind="import.named_set")
    assert response.status_code == 302 and job.status == Job.Status.DONE, job.message
    assert QuerySet.objects.get(name="grep-biasir").queries.count() == 117
    page = staff.get("/pooling/named-sets/").content.decode()
    assert "Imported as <strong>grep-biasir</strong>" in page
    (number,) = lines_holding(reference_dir / "grep-biasir" / "queries-documents_Sex & Relationship.csv", ",botrh,")
    assert f"queries-documents_Sex &amp; Relationship.csv:{number}: content_gender &#x27;botrh&#x27;" in page


@pytest.mark.django_db
def test_named_set_api_starts_a_job_and_refuses_as_json(staff, django_capture_on_commit_callbacks):
    from core.models import Job

    refused = staff.post(
        "/api/pooling/named-sets/", {"set": "grep-biasir", "collection": "x"}, content_type="application/json"
    )
    assert refused.status_code == 400 and "collection" in refused.json()
    unknown = staff.post("/api/pooling/named-sets/", {"set": "nope"}, content_type="application/json")
    assert unknown.status_code == 400 and "set" in unknown.json()
    with django_capture_on_commit_callbacks(execute=True):
        started = staff.post(
            "/api/pooling/named-sets/", {"set": "cpjku-trecdl", "name": "trecdl"}, content_type="application/json"
        )
    assert started.status_code == 202
    job = Job.objects.get(pk=started.json()["id"])
    assert job.status == Job.Status.DONE and job.result["query_set"] == "trecdl"
    assert "not imported: the MS MARCO passage collection" in job.message


@pytest.mark.django_db
def test_named_set_api_odd_bodies_get_a_4xx(staff):
    bodies = [
        {},
        {"set": 5},
        {"set": None},
        {"set": ["grep-biasir"]},
        {"set": "grep-biasir", "name": "../x"},
        {"set": "cpjku-msmarco", "collection": "a\x00b"},
        {"set": "cpjku-msmarco", "collection": "/etc/passwd"},
        {"set": "cpjku-msmarco", "collection": "relative.tsv", "qrels": "q\x00"},
        {"set": "cpjku-msmarco", "qrels": 7},
        {"set": "cpjku-msmarco", "name": "x" * 500},
    ]
    for body in bodies:
        answer = staff.post("/api/pooling/named-sets/", body, content_type="application/json")
        assert 400 <= answer.status_code < 500, (body, answer.status_code, answer.content[:300])
        assert isinstance(answer.json(), dict)
    assert staff.post("/api/pooling/named-sets/", "[1]", content_type="application/json").status_code == 400


@pytest.mark.django_db
def test_grep_biasir_texts_are_written_out_for_your_own_system(reference_dir, offline, tmp_path):
    out = run("grep-biasir", "--out", str(tmp_path / "grep"))
    folder = tmp_path / "grep"
    assert "Wrote queries.tsv, collection.tsv, qrels.txt" in out and "import_run RUN --collection grep-biasir" in out
    queries = pd.read_csv(reference_dir / "grep-biasir" / "queries.csv", dtype=str)
    written = dict(line.split("\t", 1) for line in (folder / "queries.tsv").read_text(encoding="utf-8").splitlines())
    assert written == {r.q_id: r.query for r in queries.itertuples()}
    documents = pd.concat(
        [pd.read_csv(p, dtype=str) for p in sorted((reference_dir / "grep-biasir").glob("queries-documents_*.csv"))]
    )
    texts = dict(line.split("\t", 1) for line in (folder / "collection.tsv").read_text(encoding="utf-8").splitlines())
    assert texts == {r.d_id: f"{r.doc_title} {r.document}".replace("\n", " ").strip() for r in documents.itertuples()}
    judged = {tuple(line.split()[::2]) for line in (folder / "qrels.txt").read_text().splitlines()}
    assert judged == {(r.q_id, r.d_id) for r in documents.itertuples()}  # each query's documents, judged
    # A run over the written files' ids imports against the set's collection as it is.
    first = next(iter(written))
    run_file = tmp_path / "mine.trec"
    run_file.write_text("".join(f"{first} Q0 {d} {i} {10 - i} mine\n" for i, d in enumerate(list(texts)[:3], 1)))
    call_command("import_run", str(run_file), name="mine", collection="grep-biasir", stdout=io.StringIO())

"""Imports from the site and the API: uploads streamed to staging, paths only inside IMPORT_ROOTS, jobs."""

import gzip
import math
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from core.models import Job
from pooling.models import Collection, QuerySet, Run, WordList
from tests.pooling.conftest import PASSAGES


@pytest.fixture
def researcher(django_user_model):
    return django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True)


def _upload(name, content: bytes):
    return SimpleUploadedFile(name, content, content_type="application/octet-stream")


def _staging_files() -> list[Path]:
    folder = Path(settings.CACHE_DIR) / "staging"
    return list(folder.iterdir()) if folder.is_dir() else []


@pytest.fixture
def post(client, django_capture_on_commit_callbacks):
    """POST the import form; the import task runs when the request's transaction commits."""

    def _post(kind, **data):
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(reverse("pooling:import-create", args=[kind]), data)

    return _post


@pytest.mark.django_db
def test_uploaded_gz_collection_queries_run_and_wordlist_are_imported_as_jobs(post, client, researcher, files):
    client.force_login(researcher)
    gz = gzip.compress(files["collection"].read_bytes())
    response = post("collection", name="tiny", file=_upload("collection.tsv.gz", gz))
    job = Job.objects.get(kind="import")
    assert response.status_code == 302 and response.url == reverse("core:job-detail", args=[job.pk])
    assert job.status == Job.Status.DONE and job.result["url"] == "/#collection"
    collection = Collection.objects.get(name="tiny")
    assert collection.passages == len(PASSAGES)
    # The collection stays in its uploaded file (registered, not copied), outside the staging folder.
    assert Path(collection.path).parent == Path(settings.CACHE_DIR) / "uploads"
    assert Path(collection.path).read_bytes() == gz
    assert _staging_files() == []

    post("queries", name="q", file=_upload("queries.tsv", files["queries"].read_bytes()))
    assert QuerySet.objects.get(name="q").queries.count() == 3
    post("run", name="a", collection="tiny", order="score", file=_upload("a.trec", files["run_a"].read_bytes()))
    assert Run.objects.get(name="a").rows == 6
    post("wordlist", name="tiny-words", file=_upload("words.csv", b"she,f\nhe,m\n"))
    assert WordList.objects.get(name="tiny-words").words == {"she": "f", "he": "m"}
    assert list(Job.objects.filter(kind="import").values_list("status", flat=True)) == [Job.Status.DONE] * 4


@pytest.mark.django_db
def test_the_same_upload_twice_changes_nothing_and_keeps_one_file(post, client, researcher, files):
    client.force_login(researcher)
    for _ in range(2):
        post("queries", name="q", file=_upload("queries.tsv", files["queries"].read_bytes()))
    assert QuerySet.objects.count() == 1
    assert "Already imported" in Job.objects.order_by("-pk").first().message
    assert len(list((Path(settings.CACHE_DIR) / "uploads").iterdir())) == 1


@pytest.mark.django_db
def test_a_bad_line_fails_the_job_naming_file_and_line_and_the_upload_is_removed(post, client, researcher):
    client.force_login(researcher)
    post("queries", name="q", file=_upload("queries.tsv", b"1\tfine\nno tab here\n"))
    job = Job.objects.get()
    assert job.status == Job.Status.FAILED
    assert "queries.tsv:2:" in job.message
    page = client.get(reverse("core:job-detail", args=[job.pk])).content.decode()
    assert f'href="{reverse("pooling:import-create", args=["queries"])}">Try again<' in page
    assert not QuerySet.objects.exists()
    assert list((Path(settings.CACHE_DIR) / "uploads").iterdir()) == []


@pytest.mark.django_db
def test_an_upload_over_the_limit_is_refused_on_its_field_and_leaves_no_file(post, client, researcher, files, settings):
    settings.IMPORT_UPLOAD_MAX_BYTES = 10
    client.force_login(researcher)
    response = post("queries", name="q", file=_upload("queries.tsv", files["queries"].read_bytes()))
    assert response.status_code == 400
    assert "larger than the upload limit (10 bytes" in response.context["form"].errors["file"][0]
    assert _staging_files() == [] and not Job.objects.exists()


@pytest.mark.django_db
def test_a_path_is_registered_only_inside_import_roots(post, client, researcher, files, settings, tmp_path):
    client.force_login(researcher)
    settings.IMPORT_ROOTS = []
    response = post("collection", name="tiny", path=str(files["collection"]))
    assert "set IMPORT_ROOTS" in response.context["form"].errors["path"][0]

    allowed = tmp_path / "allowed"
    allowed.mkdir()
    settings.IMPORT_ROOTS = [str(allowed)]
    response = post("collection", name="tiny", path=str(files["collection"]))
    assert response.status_code == 400
    assert "is outside the folders allowed for imports" in response.context["form"].errors["path"][0]
    # A symbolic link inside the root that points outside it is refused too.
    (allowed / "link.tsv").symlink_to(files["collection"])
    response = post("collection", name="tiny", path=str(allowed / "link.tsv"))
    assert "outside the folders allowed" in response.context["form"].errors["path"][0]
    assert not Collection.objects.exists() and not Job.objects.exists()

    inside = allowed / "collection.tsv"
    inside.write_bytes(files["collection"].read_bytes())
    response = post("collection", name="tiny", path=str(inside))
    assert response.status_code == 302
    assert Collection.objects.get(name="tiny").path == str(inside)


@pytest.mark.django_db
def test_a_run_needs_its_collection_and_a_file_or_a_path(post, client, researcher, files):
    client.force_login(researcher)
    response = post("run", name="a", file=_upload("a.trec", files["run_a"].read_bytes()))
    assert response.context["form"].errors["collection"] == ["choose the collection the run ranks"]
    response = post("queries", name="q")
    assert response.context["form"].errors["file"] == ["upload a file or give a path on the server"]
    assert _staging_files() == []


@pytest.mark.django_db
def test_imports_are_for_researchers_only(post, client, django_user_model, files):
    response = client.get(reverse("pooling:import-create", args=["queries"]))
    assert response.status_code == 302
    client.force_login(django_user_model.objects.create_user("annie", password="pw-secret-123"))
    response = post("queries", name="q", file=_upload("queries.tsv", files["queries"].read_bytes()))
    assert response.status_code == 403
    assert not QuerySet.objects.exists() and _staging_files() == []


@pytest.mark.django_db
def test_api_import_by_upload_and_by_path_returns_the_job(
    client, researcher, files, settings, django_capture_on_commit_callbacks
):
    client.force_login(researcher)
    url = "/api/pooling/imports/queries/"
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"name": "q", "file": _upload("queries.tsv", files["queries"].read_bytes())})
    assert response.status_code == 202
    body = response.json()
    assert body["kind"] == "import" and body["description"] == "Import query set q from queries.tsv"
    assert Job.objects.get(pk=body["id"]).status == Job.Status.DONE
    assert response["Location"] == f"/api/jobs/{body['id']}/"
    assert QuerySet.objects.get(name="q").queries.count() == 3

    settings.IMPORT_ROOTS = [str(files["collection"].parent)]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/api/pooling/imports/collection/",
            {"name": "tiny", "path": str(files["collection"])},
            content_type="application/json",
        )
    assert response.status_code == 202 and Collection.objects.filter(name="tiny").exists()

    response = client.post(
        "/api/pooling/imports/queries/", {"name": "q2", "path": "/etc/passwd"}, content_type="application/json"
    )
    assert response.status_code == 400
    assert "outside the folders allowed" in response.json()["path"][0]
    response = client.post(
        "/api/pooling/imports/queries/", {"name": "q2", "path": "/tmp/a\u0000b"}, content_type="application/json"
    )
    assert response.status_code == 400 and response.json()["path"] == ["Null characters are not allowed."]
    assert client.post("/api/pooling/imports/nonsense/", {"name": "x"}).status_code == 400


@pytest.mark.django_db
def test_api_import_refuses_annotators_and_keeps_no_upload(client, django_user_model, files):
    client.force_login(django_user_model.objects.create_user("annie", password="pw-secret-123"))
    response = client.post(
        "/api/pooling/imports/queries/", {"name": "q", "file": _upload("q.tsv", files["queries"].read_bytes())}
    )
    assert response.status_code == 403
    assert _staging_files() == [] and not QuerySet.objects.exists()


@pytest.mark.django_db
def test_an_imported_word_list_can_be_chosen_for_a_pool(
    post, client, researcher, world, django_capture_on_commit_callbacks
):
    """The pool counts the words of the chosen list, not the built-in ones."""
    client.force_login(researcher)
    post("wordlist", name="she-he", file=_upload("words.csv", b"she,f\nhe,m\n"))
    record = WordList.objects.get(name="she-he")
    for name, wordlist in (("builtin", ""), ("custom", record.name)):
        with django_capture_on_commit_callbacks(execute=True):
            client.post(
                reverse("pooling:pool-create"),
                {
                    "name": name,
                    "queries": "q",
                    "runs": ["a", "b"],
                    "rank_cutoff": 2,
                    "depth": 3,
                    "magnitude": "tf",
                    "tokenizer": "words",
                    "wordlist": record.pk if wordlist else "",
                },
            )
    from pooling.models import Pool

    builtin, custom = Pool.objects.get(name="builtin"), Pool.objects.get(name="custom")
    assert custom.wordlist == record and builtin.wordlist != record

    def rab(pool, qid, run):
        return pool.entries.get(query__qid=qid, run__name=run).rank_bias

    # RaB@2 = mean of tf(m) - tf(f), tf = ln(1 + count). Query 2 in run b ranks only d2
    # ("He met his father"): 3 male words of the built-in list, 1 ("he") of the she/he list.
    assert rab(builtin, "2", "b") == pytest.approx(math.log(1 + 3))
    assert rab(custom, "2", "b") == pytest.approx(math.log(1 + 1))


@pytest.mark.django_db
def test_api_refuses_an_upload_over_the_limit_as_json_naming_the_field(client, researcher, files, settings):
    settings.IMPORT_UPLOAD_MAX_BYTES = 10
    client.force_login(researcher)
    response = client.post(
        "/api/pooling/imports/queries/", {"name": "q", "file": _upload("q.tsv", files["queries"].read_bytes())}
    )
    assert response.status_code == 400
    assert "larger than the upload limit" in response.json()["file"][0]
    assert _staging_files() == [] and not Job.objects.exists()


@pytest.mark.django_db
def test_the_import_form_still_checks_csrf(researcher, files):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(researcher)
    response = client.post(
        reverse("pooling:import-create", args=["queries"]),
        {"name": "q", "file": _upload("queries.tsv", files["queries"].read_bytes())},
    )
    assert response.status_code == 403 and b"CSRF" in response.content
    assert not Job.objects.exists() and _staging_files() == []


@pytest.mark.django_db
def test_the_run_form_says_to_import_a_collection_first(client, researcher):
    client.force_login(researcher)
    html = client.get(reverse("pooling:import-create", args=["run"])).content.decode()
    assert "import the collection</a> first" in html


def test_check_import_path_refuses_unusable_paths_naming_the_field(settings, tmp_path):
    from core.errors import ServiceError
    from core.services.uploads import check_import_path

    settings.IMPORT_ROOTS = [str(tmp_path)]
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    for value, problem in (
        ("relative/file.tsv", "give an absolute path"),
        (str(tmp_path / "missing.tsv"), "is not a file"),
        (str(tmp_path), "is not a file"),
        (str(tmp_path / "a\x00b"), "not a usable path"),
        (str(loop), "not a usable path"),
    ):
        with pytest.raises(ServiceError, match=f"^collection_path: .*{problem}"):
            check_import_path(value, "collection_path")


def _no_server_paths(text: str) -> None:
    assert str(settings.CACHE_DIR) not in text and "uploads/" not in text and "staging" not in text


@pytest.mark.django_db
def test_a_failed_import_names_the_file_as_the_user_did_and_shows_an_error_not_a_bar(
    post, client, researcher, files, settings, tmp_path
):
    """Status, job page and Recent imports say ``bad_run.trec:2: problem``: never the cache path."""
    client.force_login(researcher)
    post("collection", name="tiny", file=_upload("collection.tsv", files["collection"].read_bytes()))
    post("run", name="bad", collection="tiny", order="score", file=_upload("bad_run.trec", b"1 Q0 d1 1 2.0 x\n1 Q0\n"))
    job = Job.objects.filter(kind="import").latest("pk")
    assert job.status == Job.Status.FAILED
    assert job.message.startswith("bad_run.trec:2: "), job.message
    _no_server_paths(job.message)
    page = client.get(reverse("core:job-detail", args=[job.pk])).content.decode()
    assert 'id="job-error"' in page and 'role="progressbar"' not in page
    assert "bad_run.trec:2: " in page
    _no_server_paths(page)
    index = client.get(reverse("pooling:import")).content.decode()
    assert "bad_run.trec:2: " in index and "Import run bad from bad_run.trec" in index
    _no_server_paths(index)

    # A path on the server is named as the user gave it (here through a link to a folder).
    real = tmp_path / "real"
    real.mkdir()
    (real / "bad.tsv").write_bytes(b"1\tfine\nno tab here\n")
    (tmp_path / "given").symlink_to(real)
    settings.IMPORT_ROOTS = [str(real)]
    post("queries", name="q", path=str(tmp_path / "given" / "bad.tsv"))
    job = Job.objects.filter(kind="import").latest("pk")
    assert job.status == Job.Status.FAILED and job.message.startswith(f"{tmp_path / 'given' / 'bad.tsv'}:2: ")


@pytest.mark.django_db
def test_a_job_keeps_its_title_and_shows_its_step_apart(post, client, researcher, files):
    from core.jobs import create_job
    from core.progress import Progress

    job = create_job("import", "Import collection msmarco from coll.tsv")
    job.shown_names = {"c652fe921127-coll.tsv": "coll.tsv"}
    Progress("Scanning c652fe921127-coll.tsv", total=10, job=job, bar=False).update_to(4)
    job.refresh_from_db()
    assert job.description == "Import collection msmarco from coll.tsv"
    assert job.result["step"] == "Scanning coll.tsv"
    client.force_login(researcher)
    page = client.get(reverse("core:job-detail", args=[job.pk])).content.decode()
    assert "<h1>Import collection msmarco from coll.tsv</h1>" in page and 'id="step">Scanning coll.tsv<' in page

    post("collection", name="tiny", file=_upload("collection.tsv", files["collection"].read_bytes()))
    done = Job.objects.filter(kind="import").latest("pk")
    assert done.status == Job.Status.DONE and done.description == "Import collection tiny from collection.tsv"
    assert "step" not in done.result
    index = client.get(reverse("pooling:import")).content.decode()
    assert "Import collection tiny from collection.tsv" in index and "Scanning" not in index


@pytest.mark.django_db
def test_a_runs_reordered_ties_are_named_with_what_reports_do_with_them(post, client, researcher, files):
    import io

    from django.core.management import call_command

    client.force_login(researcher)
    post("collection", name="tiny", file=_upload("collection.tsv", files["collection"].read_bytes()))
    # Query 1 ties two documents, the smaller docid first: trec_eval's rule (docid descending) reorders them.
    docids = sorted(PASSAGES)[:2]
    tied = "".join(f"1 Q0 {d} {rank} 1.0 t\n" for rank, d in enumerate(docids, 1)).encode()
    post("run", name="tied", collection="tiny", order="score", file=_upload("tied.trec", tied))
    job = Job.objects.filter(kind="import").order_by("-pk").first()
    said = "Reports and pools ignore that order by default"
    assert "tied scores: 1 query had ties that the file ordered differently" in job.message and said in job.message
    page = client.get(reverse("core:job-detail", args=[job.pk])).content.decode()
    assert said in page
    path = Path(settings.CACHE_DIR) / "tied-again.trec"
    path.write_bytes(tied)
    out = io.StringIO()
    call_command("import_run", str(path), name="tied-file", collection="tiny", order="file", stdout=out)
    assert "stored in the file's order (--order file)" in out.getvalue() and said in out.getvalue()

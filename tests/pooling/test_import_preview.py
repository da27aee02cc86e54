"""The import form's preview (first rows as the import reads them, every problem of those lines),
and imports that list every bad line instead of the first."""

import gzip

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from core.models import Job
from genderbias.errors import InputError
from pooling.models import QuerySet, Run
from pooling.preview import MAX_PROBLEMS, PREVIEW_BYTES, BadLines, head_lines, preview_head


@pytest.fixture
def researcher(client, django_user_model):
    user = django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True)
    client.force_login(user)
    return user


def _upload(name, content: bytes):
    return SimpleUploadedFile(name, content, content_type="application/octet-stream")


def _preview(client, kind, **data):
    return client.post(reverse("pooling:import-preview", args=[kind]), data)


# --- the pure helper -----------------------------------------------------------------------


def test_head_lines_keeps_whole_lines_and_reads_a_cut_gzip_as_far_as_it_goes():
    text = b"".join(b"%d\tquery number %d\n" % (i, i) for i in range(40000))
    lines, whole = head_lines(text[: PREVIEW_BYTES + 1], complete=False)
    assert not whole and lines.endswith(b"\n") and len(lines) <= PREVIEW_BYTES and text.startswith(lines)
    zipped = gzip.compress(text)
    lines, whole = head_lines(zipped[:20000], complete=False)  # a truncated stream: no error
    assert not whole and lines and text.startswith(lines) and lines.endswith(b"\n")
    assert head_lines(gzip.compress(b"1\ta\n2\tb"), complete=True) == (b"1\ta\n2\tb", True)
    with pytest.raises(InputError, match="corrupt"):
        head_lines(b"\x1f\x8bnot gzip at all", complete=True)


def test_preview_of_a_run_detects_the_format_and_lists_every_problem_with_its_line():
    run = b"1 d1 1\n1 d2 x\n\n2 d9 1\n2 d1 2\n1 d1 3\n"
    preview = preview_head("run", run, True, known_docids=lambda docids: [d for d in docids if d != "d9"])
    assert preview.run_format == "msmarco" and preview.columns == ["line", "qid", "docid", "score"]
    assert preview.rows[0] == (1, "1", "d1", -1.0)
    assert [(p.line, p.problem) for p in preview.problems] == [
        (2, "rank 'x' is not an integer"),
        (4, "docid 'd9' is not in the collection"),
        (6, "docid 'd1' appears twice for query '1'"),
    ]


def test_preview_caps_the_problems_it_lists():
    lines = b"".join(b"bad line %d\n" % i for i in range(MAX_PROBLEMS + 7))
    preview = preview_head("queries", lines, True)
    # Lines in order; the file-wide "no queries" comes after them, past the cap here.
    assert [p.line for p in preview.problems] == list(range(1, MAX_PROBLEMS + 1)) and preview.more_problems == 8
    assert preview.rows == []
    assert [p.problem for p in preview_head("queries", b"bad\n", True).problems] == [
        "no tab between query id and query text",
        "no queries",
    ]


# --- the preview endpoint ------------------------------------------------------------------


@pytest.mark.django_db
def test_preview_of_an_upload_shows_the_first_rows_and_the_bad_lines(client, researcher):
    content = b"".join(b"q%d\tquery %d\n" % (i, i) for i in range(30)) + b"no tab\n\tno id\nq1\trepeated\n"
    response = _preview(client, "queries", file=_upload("queries.tsv.gz", gzip.compress(content)))
    assert response.status_code == 200
    page = response.content.decode()
    assert "Preview of queries.tsv.gz" in page and "The whole file: 33 lines" in page
    assert page.count("<tr>") == 11  # header + 10 rows
    assert "<td>q0</td><td>query 0</td>" in page and "q10" not in page
    assert "3 problems in these lines" in page
    assert "line 31: no tab between query id and query text" in page
    assert "line 32: empty query id" in page and "line 33: query id &#x27;q1&#x27; repeats (first on line 2)" in page
    assert not QuerySet.objects.exists() and not Job.objects.exists()


@pytest.mark.django_db
def test_preview_reads_only_the_head_of_a_large_upload(client, researcher):
    content = b"".join(b"q%d\tquery %d\n" % (i, i) for i in range(100000)) + b"late bad line\n"
    response = _preview(client, "queries", file=_upload("big.tsv", content))
    page = response.content.decode()
    assert response.status_code == 200 and f"The first {PREVIEW_BYTES // 1024} KB of the file" in page
    assert "No problems in these lines." in page  # the bad line at the end is past the head


@pytest.mark.django_db
def test_preview_of_a_path_checks_docids_against_the_chosen_collection(client, researcher, files, settings):
    call_command("import_collection", str(files["collection"]), name="tiny", verbosity=0)
    settings.IMPORT_ROOTS = [str(files["run_a"].parent)]
    bad = files["run_a"].parent / "bad.trec"
    bad.write_text(files["run_a"].read_text() + "9 Q0 nowhere 1 1.0 tag\n")
    page = _preview(client, "run", path=str(bad), collection="tiny").content.decode()
    assert "TREC (qid Q0 docid rank score tag)" in page and '<th scope="col" class="num">line</th>' in page
    assert "line 7: docid &#x27;nowhere&#x27; is not in the collection" in page
    page = _preview(client, "run", path=str(bad)).content.decode()  # no collection: docids not checked
    assert "No problems in these lines." in page and "Choose the collection to check the docids too." in page
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_preview_refuses_what_the_import_refuses(client, researcher, files, settings, django_user_model):
    settings.IMPORT_ROOTS = [str(files["queries"].parent / "elsewhere")]
    response = _preview(client, "queries", path=str(files["queries"]))
    assert response.status_code == 400 and "outside the folders allowed" in response.content.decode()
    response = _preview(client, "queries")
    assert response.status_code == 400 and "choose a file or give a path" in response.content.decode()
    response = _preview(client, "queries", path="/x", file=_upload("q.tsv", b"1\ta\n"))
    assert response.status_code == 400 and "not both" in response.content.decode()
    assert _preview(client, "nonsense", file=_upload("q.tsv", b"1\ta\n")).status_code == 404
    assert client.get(reverse("pooling:import-preview", args=["queries"])).status_code == 405
    client.force_login(django_user_model.objects.create_user("annie", password="pw-secret-123"))
    assert _preview(client, "queries", file=_upload("q.tsv", b"1\ta\n")).status_code == 403


@pytest.mark.django_db
def test_the_import_form_offers_the_preview(client, researcher):
    page = client.get(reverse("pooling:import-create", args=["run"])).content.decode()
    assert f'data-preview-url="{reverse("pooling:import-preview", args=["run"])}"' in page
    assert f'data-preview-bytes="{PREVIEW_BYTES}"' in page and 'id="import-preview" aria-live="polite"' in page
    assert 'id="preview-button"' in page and "js/import_preview.js" in page


# --- every bad line listed ----------------------------------------------------------------


@pytest.fixture
def post(client, django_capture_on_commit_callbacks):
    def _post(kind, **data):
        with django_capture_on_commit_callbacks(execute=True):
            return client.post(reverse("pooling:import-create", args=[kind]), data)

    return _post


@pytest.mark.django_db
def test_an_import_with_bad_lines_lists_them_all_and_imports_nothing_unless_asked_to_skip(post, researcher):
    content = b"1\tfine\nno tab\n2\tfine too\n\tno id\n3\t\n"
    post("queries", name="q", file=_upload("queries.tsv", content))
    job = Job.objects.get()
    assert job.status == Job.Status.FAILED and not QuerySet.objects.exists()
    assert "queries.tsv: 3 bad lines; nothing was imported" in job.message
    for line, problem in [(2, "no tab between query id"), (4, "empty query id"), (5, "query '3' has no text")]:
        assert f"\n  line {line}: {problem}" in job.message

    post("queries", name="q", file=_upload("queries.tsv", content), skip_bad_lines="on")
    assert QuerySet.objects.get(name="q").queries.count() == 2


@pytest.mark.django_db
def test_a_run_import_lists_bad_lines_up_to_the_cap_and_stops_reading(researcher, files):
    from pooling import services

    call_command("import_collection", str(files["collection"]), name="tiny", verbosity=0)
    run = files["run_a"].parent / "many.trec"
    run.write_text("".join(f"1 Q0 ghost{i} {i + 1} 1.0 tag\n" for i in range(MAX_PROBLEMS + 30)))
    collection = services.import_file("collection", files["collection"], "tiny", {}, bar=False).obj
    with pytest.raises(BadLines) as caught:
        services.import_run(run, "many", collection)
    assert len(caught.value.errors) == MAX_PROBLEMS and "more than 50 bad lines (the first 50 listed)" in str(
        caught.value
    )
    assert caught.value.problems()[0] == {"line": 1, "problem": "docid 'ghost0' is not in the collection"}
    assert not Run.objects.exists()
    # One bad line is refused as itself, as before: path:line: problem.
    one = files["run_a"].parent / "one.trec"
    one.write_text(files["run_a"].read_text() + "1 Q0 ghost 9 1.0 tag\n")
    with pytest.raises(InputError, match=r"one.trec:7: docid 'ghost' is not in the collection$"):
        services.import_run(one, "one", collection)


# --- counts of the outcome ----------------------------------------------------------------


@pytest.mark.django_db
def test_the_outcome_counts_lines_read_imported_and_skipped_on_the_job_page_and_recent_imports(
    post, client, researcher, files
):
    call_command("import_collection", str(files["collection"]), name="tiny", verbosity=0)
    content = files["run_a"].read_bytes() + b"1 Q0 ghost 9 1.0 tag\n\nnot a run line\n"
    post("run", name="a", collection="tiny", file=_upload("a.trec", content), skip_bad_lines="on")
    job = Job.objects.get()
    assert job.status == Job.Status.DONE and Run.objects.get(name="a").rows == 6
    assert job.result | {"url": None} == {
        "run": "a",
        "created": True,
        "url": None,
        "file": "a.trec",  # as the user named it, never the staging path
        "lines_read": 8,
        "imported": 6,
        "skipped": 2,
    }
    assert "Imported: run a; 8 lines read, 6 imported, 2 skipped; first bad line skipped: " in job.message
    page = client.get(reverse("core:job-detail", args=[job.pk])).content.decode()
    assert "8 lines read, 6 imported, 2 skipped" in page

    post("run", name="a", collection="tiny", file=_upload("a.trec", content), skip_bad_lines="on")
    again = Job.objects.order_by("-pk").first()
    assert again.result["imported"] == 0 and again.result["lines_read"] is None
    assert "Already imported (unchanged): run a; nothing imported" in again.message

    page = client.get(reverse("pooling:import")).content.decode()
    rows = page.split('<table id="import-jobs">')[1].split("<tbody>")[1].split("</tr>")
    assert '<td class="num">–</td><td class="num">0</td><td class="num">0</td>' in rows[0]
    assert '<td class="num">8</td><td class="num">6</td><td class="num">2</td>' in rows[1]


@pytest.mark.django_db
def test_the_api_job_result_reports_the_counts(client, researcher, files, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/api/pooling/imports/queries/",
            {"name": "q", "file": _upload("q.tsv", files["queries"].read_bytes() + b"bad\n"), "skip_bad_lines": True},
        )
    assert response.status_code == 202
    job = client.get(response["Location"]).json()
    assert job["status"] == "done"
    assert {k: job["result"][k] for k in ("lines_read", "imported", "skipped")} == {
        "lines_read": 4,
        "imported": 3,
        "skipped": 1,
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/api/pooling/imports/queries/", {"name": "q2", "file": _upload("q.tsv", b"1\ta\nbad\n\tx\n")}
        )
    job = client.get(response["Location"]).json()
    assert job["status"] == "failed" and "2 bad lines; nothing was imported" in job["message"]


# --- in a browser ---------------------------------------------------------------------------


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_choosing_a_file_shows_its_preview_before_importing(page, login, django_user_model, tmp_path):
    django_user_model.objects.create_user("researcher", password="pw-secret-123", is_staff=True)
    login("researcher")
    queries = tmp_path / "queries.tsv"
    queries.write_bytes(b"".join(b"q%d\tquery number %d\n" % (i, i) for i in range(20)) + b"no tab here\n")
    page.goto(reverse("pooling:import-create", args=["queries"]))
    page.get_by_label("File").set_input_files(str(queries))  # choosing the file previews it
    rows = page.locator("#preview-rows tbody tr")
    rows.first.wait_for()
    assert rows.count() == 10 and rows.first.inner_text().split("\t") == ["q0", "query number 0"]
    assert page.locator("#preview-problems li").all_inner_texts() == ["line 21: no tab between query id and query text"]
    assert not QuerySet.objects.exists() and not Job.objects.exists()
    # The button previews again, by keyboard too.
    page.locator("#preview").evaluate("node => node.remove()")
    page.get_by_role("button", name="Preview the first rows").focus()
    page.keyboard.press("Enter")
    page.locator("#preview-problems").wait_for()
    for width, scheme in [(1280, "light"), (390, "dark")]:
        page.set_viewport_size({"width": width, "height": 900})
        page.emulate_media(color_scheme=scheme)
        assert page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.parametrize("name", ["..gz", "...gz", ".gz", "x..gz", "../../etc/passwd.gz", "..\\..\\x.gz"])
def test_preview_of_an_upload_with_any_name_answers(researcher, client, name):
    content = gzip.compress(b"1\tfirst query\n2\tsecond\n")
    response = _preview(client, "queries", file=_upload(name, content))
    assert response.status_code == 200, response.content[:300]
    assert response.context["preview"].rows == [("1", "first query"), ("2", "second")]


@pytest.mark.parametrize("name", ["..gz", "...gz", ".", "..", "../x", "a/../..", "\\..\\.."])
def test_preview_head_writes_any_name_as_a_file_in_its_own_folder(name):
    assert sorted(preview_head("wordlist", b"she,f\nhe,m\n", True, file_name=name).rows) == [("he", "m"), ("she", "f")]


def test_preview_of_qrels_lists_an_out_of_range_grade_as_a_problem(researcher, client):
    response = _preview(client, "qrels", file=_upload("q.qrels", b"1 0 d1 1\n1 0 d2 99999999999\n1 0 d3 1_0\n"))
    assert response.status_code == 200
    preview = response.context["preview"]
    assert preview.rows == [("1", "d1", 1)]
    assert [(p.line, p.problem.split(" is ")[0]) for p in preview.problems] == [
        (2, "relevance 99999999999"),
        (3, "relevance '1_0'"),
    ]


def test_preview_of_queries_shows_a_line_with_a_second_tab_as_a_problem():
    preview = preview_head("queries", b"1\tfirst\n2\tquery\tthird column\n3\tthe\x0bthird\n", True)
    assert preview.rows == [("1", "first"), ("3", "the third")]
    assert [(p.line, p.problem) for p in preview.problems] == [
        (2, "more than one tab: expected qid<TAB>query (a query text holds no tab)")
    ]

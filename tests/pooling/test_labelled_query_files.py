"""The field's query files accepted (issue 45, item 2): the study's ``qid,query,label`` (with or
without its header), CSV and TSV with a header and their column mapping in the import preview,
labels read with the one vocabulary, and a labelled query set taken as a batch's gold questions
or a pre-labeller's labelled data.

The study's file is the real one (``../shared/reference/queries_gender_annotated.csv``: 3,750
queries, no header, no quoting; its README gives the label counts checked here).
"""

from collections import Counter
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from core.models import Job
from genderbias.errors import InputError
from genderbias.files.queryfiles import read_query_table
from pooling.models import QuerySet
from tests.browser_jobs import JOB_DEADLINE_MS

#: The study's label counts (reference README): n 1,765, f 742, m 1,202, o 41.
STUDY_COUNTS = {"n": 1765, "f": 742, "m": 1202, "o": 41}


@pytest.fixture
def study(reference_dir) -> Path:
    return reference_dir / "queries_gender_annotated.csv"


@pytest.fixture
def researcher(client, django_user_model):
    user = django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True)
    client.force_login(user)
    return user


def _upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/octet-stream")


# --- the reader ----------------------------------------------------------------------------


@pytest.mark.django_db  # the app registry (annotation plugs its label vocabulary in at start-up)
def test_the_study_file_reads_with_and_without_its_header(study, tmp_path):
    rows, table = read_query_table(study)
    assert table.header is None and table.delimiter == "," and table.labelled
    assert len(rows) == 3750 and Counter(label for *_, label in rows) == STUDY_COUNTS
    assert rows[0] == ("986563", "who was known as the heretic king", "m")
    with_commas = [text for _, text, _ in rows if "," in text]
    assert with_commas  # queries holding commas stay whole (the label is the last field)

    published = tmp_path / "published.csv"  # as the study published it: with its header line
    published.write_text("qid,query,label\n" + study.read_text(encoding="utf-8"), encoding="utf-8")
    rows_h, table_h = read_query_table(published)
    assert table_h.header == ("qid", "query", "label") and rows_h == rows


@pytest.mark.django_db
def test_tsv_with_a_header_its_guessed_columns_and_a_changed_mapping(tmp_path):
    path = tmp_path / "labelled.tsv"
    path.write_text("gender\tquery_id\ttext\tnotes\nneutral\tq1\tsymptoms of the flu\tx\nFemale\tq2\tqueen, of x\ty\n")
    rows, table = read_query_table(path)
    assert table.columns == {"label": 0, "qid": 1, "query": 2}
    assert rows == [("q1", "symptoms of the flu", "n"), ("q2", "queen, of x", "f")]
    rows, table = read_query_table(path, {"query": "notes", "label": "none"})  # by name; labels dropped
    assert rows == [("q1", "x", ""), ("q2", "y", "")] and not table.labelled
    rows, _ = read_query_table(path, {"qid": "3", "query": 2})  # by number (1 = first)
    assert rows[0][:2] == ("symptoms of the flu", "q1")
    with pytest.raises(InputError, match="no column 'topic'"):
        read_query_table(path, {"qid": "topic"})


@pytest.mark.django_db
def test_a_bad_label_names_the_file_and_line_and_plain_files_read_as_before(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("qid,query,label\n1,a query,n\n2,another,maybe\n")
    with pytest.raises(InputError) as caught:
        read_query_table(path)
    assert caught.value.line == 3 and str(path) in str(caught.value)
    assert "unknown label 'maybe'" in caught.value.problem and "non-gendered" in caught.value.problem
    plain = tmp_path / "plain.tsv"
    plain.write_text("1\ta\tb\n")  # the rankers' format: a second tab is still a bad line
    with pytest.raises(InputError, match="more than one tab"):
        read_query_table(plain)


# --- the command ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_command_imports_the_study_file_and_its_labels_become_a_batchs_gold(study, tmp_path):
    out = StringIO()
    call_command("import_queries", str(study), name="study", stdout=out)
    assert "3,750 queries, 3,750 labelled" in out.getvalue()
    query_set = QuerySet.objects.get(name="study")
    assert dict(Counter(query_set.queries.values_list("label", flat=True))) == STUDY_COUNTS

    pool_file = tmp_path / "new.tsv"
    pool_file.write_text("".join(f"p{i}\tnew query {i}\n" for i in range(20)))
    call_command("import_queries", str(pool_file), name="new", verbosity=0)
    call_command(
        "create_batch",
        name="b",
        queries="new",
        gold="queries:study",
        gold_per_hit=1,
        queries_per_hit=5,
        stdout=StringIO(),
    )
    from annotation.models import Batch, BatchQuery

    gold = BatchQuery.objects.filter(batch=Batch.objects.get(name="b"), is_gold=True)
    assert gold.count() == 3750
    assert gold.get(qid="986563").gold_label == "m"
    with pytest.raises(CommandError, match="has no labels"):
        call_command("create_batch", name="c", queries="new", gold="queries:new", gold_per_hit=1, stdout=StringIO())


@pytest.mark.django_db
def test_command_takes_a_column_mapping(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text('text,id,category\n"a, b",1,male\nc,2,other\n')
    call_command("import_queries", str(path), name="x", query_column="text", qid_column="id", verbosity=0)
    assert list(QuerySet.objects.get(name="x").queries.values_list("qid", "text", "label")) == [
        ("1", "a, b", "m"),
        ("2", "c", "o"),
    ]
    with pytest.raises(CommandError, match="label_column: no column 'gender'"):
        call_command("import_queries", str(path), name="y", label_column="gender", verbosity=0)
    assert not QuerySet.objects.filter(name="y").exists()


# --- the page and the API ------------------------------------------------------------------


@pytest.mark.django_db
def test_preview_offers_the_column_mapping_and_a_changed_one_is_used(client, researcher):
    content = b"query\tqid\tlabel\nflu symptoms\t1\tn\nking of france\t2\tm\n"
    page = client.post(
        reverse("pooling:import-preview", args=["queries"]), {"file": _upload("q.tsv", content)}
    ).content.decode()
    assert 'id="preview-columns"' in page and "guessed from the header" in page
    assert '<option value="2" selected>2: qid</option>' in page
    assert "<td>flu symptoms</td><td>n</td>" in page.replace("</td>\n<td>", "</td><td>")
    page = client.post(
        reverse("pooling:import-preview", args=["queries"]),
        {"file": _upload("q.tsv", content), "label_column": "none"},
    ).content.decode()
    assert '<option value="none" selected>' in page and '<th scope="col">label</th>' not in page


@pytest.mark.django_db
def test_page_imports_the_study_file_as_gold_and_the_batch_form_takes_it(
    study, client, researcher, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("pooling:import-create", args=["queries"]),
            {"name": "study", "file": _upload("queries_gender_annotated.csv", study.read_bytes()), "labels_as": "gold"},
        )
    job = Job.objects.get(kind="import")
    assert response.status_code == 302 and job.status == Job.Status.DONE, job.message
    assert job.result["url"] == reverse("annotation:batch-create") + "?gold_set=study"
    assert "3,750 labelled" in job.message
    form = client.get(job.result["url"]).content.decode()
    import re

    chosen = re.search(r'<select name="gold_set"[^>]*>(.*?)</select>', form, re.S)
    assert chosen and '<option value="study" selected>' in chosen.group(1), form[-3000:]


@pytest.mark.django_db
def test_api_imports_a_labelled_file_and_creates_a_batch_with_it_as_gold(
    client, researcher, django_capture_on_commit_callbacks
):
    labelled = b"qid,query,label\ng1,who was the first queen of england,female\ng2,what is a synapse,n\n"
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post("/api/pooling/imports/queries/", {"name": "gold", "file": _upload("g.csv", labelled)})
    assert answer.status_code == 202
    assert list(QuerySet.objects.get(name="gold").queries.values_list("label", flat=True)) == ["f", "n"]
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/api/pooling/imports/queries/", {"name": "new", "file": _upload("n.tsv", b"1\ta\n2\tb\n")})
    answer = client.post(
        "/api/annotation/batches/",
        {"name": "b", "queries": "new", "gold_set": "gold", "gold_per_hit": 1, "queries_per_hit": 2},
        content_type="application/json",
    )
    assert answer.status_code == 201, answer.content
    from annotation.models import BatchQuery

    assert dict(BatchQuery.objects.filter(batch__name="b", is_gold=True).values_list("qid", "gold_label")) == {
        "g1": "f",
        "g2": "n",
    }
    with django_capture_on_commit_callbacks(execute=True):
        bad = client.post(
            "/api/pooling/imports/queries/", {"name": "bad", "file": _upload("b.csv", b"qid,query,label\n1,a,zz\n")}
        )
    assert bad.status_code == 202  # the import is a job; it fails naming the file and line
    job = Job.objects.get(pk=bad.json()["id"])
    assert job.status == Job.Status.FAILED and job.message.startswith("b.csv: ")
    assert "line 2: unknown label 'zz'; use n, f, m, o" in job.message


@pytest.mark.django_db
def test_a_labelled_query_set_is_a_pre_labellers_training_or_test_data(tmp_path):
    from annotation.crowd.services.batches import read_labelled
    from annotation.machine.services.prelabels import training_data

    path = tmp_path / "l.tsv"
    path.write_text("qid\tquery\tlabel\n1\twho was the first queen of england\tf\n2\twhat is a synapse\tn\n")
    call_command("import_queries", str(path), name="labelled", verbosity=0)
    assert training_data("queries:labelled") == (
        ["who was the first queen of england", "what is a synapse"],
        ["f", "n"],
        "queries:labelled",
    )
    assert [(q.qid, q.label) for q in read_labelled("queries:labelled")] == [("1", "f"), ("2", "n")]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_preview_columns_are_changed_in_a_browser_and_the_import_uses_them(
    page, login, django_user_model, tmp_path
):
    django_user_model.objects.create_user("researcher", password="pw-secret-123", is_staff=True)
    login("researcher")
    path = tmp_path / "labelled.csv"
    path.write_text("id,query,gender,notes\n1,flu symptoms,neutral,a note\n2,first queen of england,female,b\n")
    page.goto(reverse("pooling:import-create", args=["queries"]))
    page.get_by_label("Name").fill("mapped")
    page.get_by_label("File").set_input_files(str(path))
    page.locator("#preview-columns").wait_for()
    assert page.locator("#preview-rows thead th").all_inner_texts() == ["qid", "query", "label"]
    assert page.locator("#preview-rows tbody tr").first.inner_text().split("\t") == ["1", "flu symptoms", "n"]
    page.locator('select[data-column-role="query"]').select_option("4")  # the notes, as the query
    page.locator("#preview-rows tbody tr").first.filter(has_text="a note").wait_for()
    page.locator('select[data-column-role="label"]').select_option("none")
    page.locator("#preview-rows thead th").nth(2).wait_for(state="detached")
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.get_by_role("button", name="Import").click()
    page.wait_for_url("**/jobs/**", timeout=JOB_DEADLINE_MS)
    rows = list(QuerySet.objects.get(name="mapped").queries.values_list("qid", "text", "label"))
    assert rows == [("1", "a note", ""), ("2", "b", "")]


@pytest.mark.django_db
@pytest.mark.parametrize("column", ["²", "①", "٣", "1_0", "+1"])
def test_a_column_number_python_would_misread_is_a_clear_400(
    client, researcher, column, django_capture_on_commit_callbacks
):
    """Issue 53: ``"²".isdigit()`` is true and ``int("²")`` raises: the preview answered 500, the import
    job failed on a traceback. The file is read by the import's job: it fails naming the field."""
    from core.models import Job

    content = b"query\tqid\tlabel\nflu symptoms\t1\tn\nking of france\t2\tm\n"
    client.raise_request_exception = False
    page = client.post(
        reverse("pooling:import-preview", args=["queries"]), {"file": _upload("q.tsv", content), "qid_column": column}
    )
    assert page.status_code in (200, 400) and "no column" in page.content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(
            "/api/pooling/imports/queries/", {"name": "cols", "file": _upload("q.tsv", content), "qid_column": column}
        )
    assert answer.status_code in (202, 400), answer.content[:300]
    if answer.status_code == 202:
        job = Job.objects.get(pk=answer.json()["id"])
        assert job.status == Job.Status.FAILED and job.message.startswith("qid_column: no column"), job.message
    assert not QuerySet.objects.filter(name="cols").exists()


@pytest.mark.django_db
def test_csv_fields_quoted_across_lines_are_read_as_rfc_4180_says(tmp_path):
    """Issue 53: a field quoted across lines (RFC 4180, what spreadsheets write for a cell with a line
    break) was refused. The expected rows: Python's csv module reading the whole file, as one reader."""
    import csv as csv_module
    import io

    content = 'id,text,label\n1,"who is the\nqueen of france",f\n2,"a ""quoted""\r\nword, and more",n\n3,plain,m\n'
    path = tmp_path / "multi.csv"
    path.write_text(content, newline="")
    expected = [
        (row[0], " ".join(row[1].split()), row[2])
        for row in list(csv_module.reader(io.StringIO(content, newline="")))[1:]
    ]
    call_command("import_queries", str(path), name="multi", verbosity=0)
    rows = list(QuerySet.objects.get(name="multi").queries.order_by("pk").values_list("qid", "text", "label"))
    assert [(q, " ".join(t.split())) for q, t, _ in rows] == [(q, t) for q, t, _ in expected]
    assert [label for *_, label in rows] == ["f", "n", "m"]
    # The line numbers of what follows stay the file's own: a bad line after the record is named by its line.
    path.write_text('id,text,label\n1,"two\nlines",f\n2,,n\n')
    with pytest.raises(CommandError, match=r"multi.csv:4: "):
        call_command("import_queries", str(path), name="multi2", verbosity=0)
    path.write_text('id,text,label\n1,"never closed,f\n2,b,n\n')
    with pytest.raises(CommandError, match=r"multi.csv:2: a quoted field opened on this line is never closed"):
        call_command("import_queries", str(path), name="multi3", verbosity=0)


def test_a_gold_file_quoted_across_lines_is_read(tmp_path):
    from annotation.crowd.services.batches import read_labelled_file

    path = tmp_path / "gold.csv"
    path.write_text('qid,query,label\ng1,"what is\na mother",f\ng2,what is a father,m\n')
    assert [(g.qid, g.text, g.label) for g in read_labelled_file(path)] == [
        ("g1", "what is a mother", "f"),
        ("g2", "what is a father", "m"),
    ]

"""Relevance judgments (TREC qrels): the command, the page, the API; idempotent, all or nothing."""

import gzip
from pathlib import Path

import polars as pl
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from core.models import Job
from genderbias.errors import InputError, Skipped
from genderbias.files.qrelfiles import read_qrels
from pooling import services
from pooling.models import Collection, Qrels, QuerySet

QRELS = "1 0 d1 2\n1 0 d3 0\n2\t0\td4\t1\n\n3 Q0 d2 1\n"


@pytest.fixture
def qrels_file(tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text(QRELS)
    return path


def test_the_reader_keeps_graded_judgments_in_file_order(qrels_file):
    frame = read_qrels(qrels_file)
    assert frame.columns == ["qid", "docid", "rel"]
    assert frame.rows() == [("1", "d1", 2), ("1", "d3", 0), ("2", "d4", 1), ("3", "d2", 1)]


def test_the_reader_names_file_and_line_of_each_problem(tmp_path):
    path = tmp_path / "bad.qrels"
    path.write_text("1 0 d1 2\n1 0 d1\n1 0 d2 x\n1 0 d1 1\n")
    with pytest.raises(InputError) as error:
        read_qrels(path)
    assert str(error.value) == f"{path}:2: expected 4 fields 'qid 0 docid relevance', found 3"
    skipped = Skipped()
    frame = read_qrels(path, skipped=skipped)
    assert frame.rows() == [("1", "d1", 2)]
    assert [(e.line, e.problem) for e in skipped.errors] == [
        (2, "expected 4 fields 'qid 0 docid relevance', found 3"),
        (3, "relevance 'x' is not an integer (digits 0-9, optionally after a minus sign)"),
        (4, "document 'd1' is judged twice for query '1' (line 1)"),
    ]


def test_grades_are_read_as_trec_eval_reads_them(tmp_path):
    # ASCII digits after an optional minus, within a 32-bit integer; Python's int() would read
    # "1_0" as 10, "٣" (Arabic-Indic three) as 3 and " +1" as 1; trec_eval reads none of them so.
    path = tmp_path / "grades.qrels"
    grades = [
        "0",
        "-1",
        "3",
        "007",
        "2147483647",
        "-2147483648",
        "1_0",
        "\u0663",
        "+1",
        "1.0",
        "2147483648",
        "99999999999",
    ]
    path.write_text("".join(f"1 0 d{i} {grade}\n" for i, grade in enumerate(grades)), encoding="utf-8")
    skipped = Skipped()
    frame = read_qrels(path, skipped=skipped)
    assert frame["rel"].to_list() == [0, -1, 3, 7, 2147483647, -2147483648]
    not_integer = "is not an integer (digits 0-9, optionally after a minus sign)"
    assert [(e.line, e.problem) for e in skipped.errors] == [
        (7, f"relevance '1_0' {not_integer}"),
        (8, f"relevance '\u0663' {not_integer}"),
        (9, f"relevance '+1' {not_integer}"),
        (10, f"relevance '1.0' {not_integer}"),
        (11, "relevance 2147483648 is out of range (-2,147,483,648 to 2,147,483,647)"),
        (12, "relevance 99999999999 is out of range (-2,147,483,648 to 2,147,483,647)"),
    ]
    with pytest.raises(InputError, match=r":7: relevance '1_0' is not an integer"):
        read_qrels(path)


@pytest.mark.django_db
def test_an_out_of_range_grade_is_a_bad_line_of_the_import_skipped_on_request(world, tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("1 0 d1 1\n2 0 d3 99999999999\n3 0 d2 1_0\n")
    with pytest.raises(CommandError) as error:
        call_command("import_qrels", str(path), name="judged", queries="q", collection="tiny")
    assert "line 2: relevance 99999999999 is out of range" in str(error.value)
    assert "line 3: relevance '1_0' is not an integer" in str(error.value)
    call_command("import_qrels", str(path), name="judged", queries="q", collection="tiny", skip_bad_lines=True)
    assert services.qrels_frame(Qrels.objects.get(name="judged")).rows() == [("1", "d1", 1)]


@pytest.mark.django_db
def test_command_imports_gz_qrels_once_and_refuses_another_content_under_the_name(world, tmp_path, capsys):
    path = tmp_path / "qrels.txt.gz"
    path.write_bytes(gzip.compress(QRELS.encode()))
    call_command("import_qrels", str(path), name="judged", queries="q", collection="tiny")
    assert "Imported: qrels 'judged': 4 judgments of 3 queries (3 relevant)" in capsys.readouterr().out
    qrels = Qrels.objects.get(name="judged")
    assert (qrels.collection.name, qrels.query_set.name, qrels.judgments, qrels.queries) == ("tiny", "q", 4, 3)
    assert pl.read_parquet(qrels.data).rows() == [("1", "d1", 2), ("1", "d3", 0), ("2", "d4", 1), ("3", "d2", 1)]
    assert services.qrels_frame(qrels).rows() == pl.read_parquet(qrels.data).rows()

    call_command("import_qrels", str(path), name="judged", queries="q", collection="tiny")
    assert "Already imported (unchanged)" in capsys.readouterr().out
    assert Qrels.objects.count() == 1

    other = tmp_path / "other.txt"
    other.write_text("1 0 d2 1\n")
    with pytest.raises(CommandError, match="already exist with different content"):
        call_command("import_qrels", str(other), name="judged", queries="q", collection="tiny")


@pytest.mark.django_db
def test_a_rebuilt_cache_gives_the_same_judgments(world, qrels_file):
    qrels = services.import_qrels(
        qrels_file, "judged", Collection.objects.get(name="tiny"), QuerySet.objects.get(name="q")
    ).obj
    before = services.qrels_frame(qrels).rows()
    Path(qrels.data).unlink()
    assert services.qrels_frame(qrels).rows() == before


@pytest.mark.django_db
def test_judgments_of_unknown_queries_or_documents_refuse_the_file_listing_every_line(world, tmp_path):
    path = tmp_path / "qrels.txt"
    path.write_text("1 0 d1 1\n9 0 d1 1\n1 0 nope 1\n2 0 d3 1\n")
    with pytest.raises(CommandError) as error:
        call_command("import_qrels", str(path), name="judged", queries="q", collection="tiny")
    message = str(error.value)
    assert "2 bad lines" in message and "nothing was imported" in message
    assert "line 2: query '9' is not in query set 'q'" in message
    assert "line 3: document 'nope' is not in the collection" in message
    assert not Qrels.objects.exists()

    call_command("import_qrels", str(path), name="judged", queries="q", collection="tiny", skip_bad_lines=True)
    assert Qrels.objects.get(name="judged").judgments == 2


@pytest.mark.django_db
def test_qrels_are_imported_from_the_page_and_the_api(
    world, client, django_user_model, django_capture_on_commit_callbacks
):
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    page = client.get(reverse("pooling:import-create", args=["qrels"]))
    assert page.status_code == 200 and b"qid 0 docid relevance" in page.content
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("pooling:import-create", args=["qrels"]),
            {
                "name": "judged",
                "collection": "tiny",
                "queries": "q",
                "file": SimpleUploadedFile("qrels.txt", QRELS.encode()),
            },
        )
    assert response.status_code == 302
    job = Job.objects.get(kind="import")
    assert job.status == Job.Status.DONE and job.result["imported"] == 4
    assert Qrels.objects.get(name="judged").judgments == 4

    response = client.post(
        "/api/pooling/imports/qrels/", {"name": "judged2", "file": SimpleUploadedFile("q.txt", b"1 0 d1 1\n")}
    )
    assert response.status_code == 400
    assert set(response.json()) == {"collection", "queries"}
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/api/pooling/imports/qrels/",
            {
                "name": "judged2",
                "collection": "tiny",
                "queries": "q",
                "file": SimpleUploadedFile("q.txt", b"1 0 d1 1\n"),
            },
        )
    assert response.status_code == 202
    assert Job.objects.get(pk=response.json()["id"]).status == Job.Status.DONE
    assert Qrels.objects.get(name="judged2").judgments == 1

    bad = SimpleUploadedFile("bad.txt", b"1 0 d1 1\n1 0 d1\n")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/api/pooling/imports/qrels/", {"name": "judged3", "collection": "tiny", "queries": "q", "file": bad}
        )
    job = Job.objects.get(pk=response.json()["id"])
    assert job.status == Job.Status.FAILED and "bad.txt:2: expected 4 fields" in job.message
    assert not Qrels.objects.filter(name="judged3").exists()


def test_the_cache_of_a_made_query_sets_judgments_is_keyed_by_its_queries_not_its_id(world, qrels_file):
    """A query set made here (a pool's) has no file checksum: its judgments' cache is named by its
    qids, so the same queries share one file and other queries never read it (an id comes back after
    a deletion on SQLite)."""
    collection = Collection.objects.get(name="tiny")
    made = {
        name: services.create_query_set(name, queries, origin=QuerySet.Origin.POOL)
        for name, queries in {
            "first": [("1", "who is she"), ("3", "who is he")],
            "same": [("3", "who is he"), ("1", "who is she")],
            "other": [("1", "who is she")],
        }.items()
    }
    data = {
        name: services.import_qrels(qrels_file, name, collection, qs, skip_bad_lines=True).obj.data
        for name, qs in made.items()
    }
    assert data["first"] == data["same"] != data["other"]
    assert pl.read_parquet(data["other"])["qid"].unique().to_list() == ["1"]

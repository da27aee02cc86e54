"""Pool page, downloads, the pool form running as a task, progress JSON and the REST API."""

import pytest
from django.core.management import call_command
from django.urls import reverse

from core.models import Job
from pooling.models import Pool


@pytest.fixture
def pool(world):
    call_command("pool", name="p", queries="q", runs="a,b", rank_cutoff=2, depth=1, verbosity=0)
    return Pool.objects.get(name="p")


@pytest.mark.django_db
def test_pool_page_shows_size_lists_overlap_and_queries(client, admin_user, pool):
    client.force_login(admin_user)
    response = client.get(reverse("pooling:pool-detail", args=["p"]))
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="pool-size">2<' in html
    assert "who is she" in html and "what is a synapse" in html
    assert "Overlap between runs" in html


@pytest.mark.django_db
def test_pool_page_needs_login(client, pool):
    response = client.get(reverse("pooling:pool-detail", args=["p"]))
    assert response.status_code == 302


@pytest.mark.django_db
def test_downloads(client, admin_user, pool):
    client.force_login(admin_user)
    tsv = client.get(reverse("pooling:pool-download", args=["p", "tsv"])).content.decode()
    assert tsv == "1\twho is she\n2\twhat is a synapse\n"
    csv = client.get(reverse("pooling:pool-download", args=["p", "csv"])).content.decode().splitlines()
    assert csv[0] == "qid,query,RaB@2:a,RaB@2:b,lists"
    assert client.get("/pooling/pools/p/download.xlsx").status_code == 404


@pytest.mark.django_db
def test_pool_form_runs_the_task_and_records_progress(client, admin_user, world, django_capture_on_commit_callbacks):
    client.force_login(admin_user)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("pooling:pool-create"),
            {
                "name": "web",
                "queries": "q",
                "runs": ["a", "b"],
                "rank_cutoff": 2,
                "depth": 1,
                "magnitude": "tf",
                "tokenizer": "words",
            },
        )
    job = Job.objects.get()
    assert response.status_code == 302 and response.url == reverse("core:job-detail", args=[job.pk])
    progress = client.get(reverse("core:job-progress", args=[job.pk])).json()
    assert progress["status"] == "done"
    assert progress["result"]["url"] == reverse("pooling:pool-detail", args=["web"])
    assert Pool.objects.filter(name="web").exists()


@pytest.mark.django_db
def test_failed_job_keeps_the_message(client, admin_user, pool, django_capture_on_commit_callbacks):
    client.force_login(admin_user)
    with pytest.raises(Exception, match="already exists"), django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("pooling:pool-create"),
            {
                "name": "p",
                "queries": "q",
                "runs": ["a"],
                "rank_cutoff": 2,
                "depth": 1,
                "magnitude": "tf",
                "tokenizer": "words",
            },
        )
    job = Job.objects.get()
    assert job.status == Job.Status.FAILED and "already exists" in job.message


@pytest.mark.django_db
def test_api(client, admin_user, pool):
    assert client.get("/api/pooling/pools/").status_code in (401, 403)
    client.force_login(admin_user)
    pools = client.get("/api/pooling/pools/").json()
    assert pools["results"][0]["name"] == "p" and pools["results"][0]["runs"] == ["a", "b"]
    entries = client.get("/api/pooling/pools/p/entries/").json()["results"]
    assert {(e["qid"], e["run"]) for e in entries} == {("1", "a"), ("1", "b"), ("2", "a"), ("2", "b")}
    queries = client.get("/api/pooling/query-sets/q/queries/").json()["results"]
    assert [q["qid"] for q in queries] == ["1", "2", "3"]
    assert client.get("/api/schema/").status_code == 200


@pytest.mark.django_db
def test_csv_download_neutralises_formulas_and_tsv_keeps_text(client, admin_user, pool):
    """A search-log query such as ``=HYPERLINK(...)`` is text in the CSV for people, verbatim in the TSV."""
    import csv
    import io

    from pooling.models import Query

    formula = '=HYPERLINK("http://evil.example","click")'
    Query.objects.filter(qid="1").update(text=formula)
    client.force_login(admin_user)
    body = client.get(reverse("pooling:pool-download", args=["p", "csv"])).content.decode()
    rows = {row["qid"]: row for row in csv.DictReader(io.StringIO(body))}
    assert rows["1"]["query"] == "'" + formula
    assert all(not value.startswith("=") for row in rows.values() for value in row.values())
    rab = rows["1"]["RaB@2:a"]
    assert rab == "" or float(rab) == float(rab)  # numbers stay numbers, never quoted with '
    tsv = client.get(reverse("pooling:pool-download", args=["p", "tsv"])).content.decode()
    assert f"1\t{formula}\n" in tsv

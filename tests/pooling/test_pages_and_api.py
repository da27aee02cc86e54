"""Pool page, downloads, the pool form running as a task, progress JSON and the REST API."""

import pytest
from django.core.management import call_command
from django.urls import reverse

from core.models import Job
from pooling import services
from pooling.models import Pool, Run


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
def test_pool_page_searches_and_pages_its_queries_on_the_server(client, admin_user, pool, settings, monkeypatch):
    monkeypatch.setattr("core.web.paging.ROWS_PER_PAGE", 1)
    client.force_login(admin_user)
    url = reverse("pooling:pool-detail", args=["p"])
    first = client.get(url).content.decode()
    assert "who is she" in first and "what is a synapse" not in first and "page 1 of 2" in first
    assert 'href="?page=2" rel="next"' in first
    second = client.get(url + "?page=2").content.decode()
    assert "what is a synapse" in second and "who is she" not in second
    found = client.get(url + "?q=SYNAPSE").content.decode()
    assert "what is a synapse" in found and "who is she" not in found and "1 of 2 rows match" in found
    assert "No query matches." in client.get(url + "?q=zebra").content.decode()
    assert "who is she" in client.get(url + "?page=abc").content.decode()  # a bad page number shows page 1


@pytest.mark.django_db
def test_pool_page_sorts_every_query_on_the_server_not_one_page(client, admin_user, pool, monkeypatch):
    """One row a page: sorting must order the whole pool, so page 1 holds its first row whichever page held it."""
    monkeypatch.setattr("core.web.paging.ROWS_PER_PAGE", 1)
    client.force_login(admin_user)
    url = reverse("pooling:pool-detail", args=["p"])
    by_query = client.get(url + "?sort=query").content.decode()
    assert "what is a synapse" in by_query and "who is she" not in by_query  # "what" < "who" over all rows
    assert 'href="?page=2&amp;sort=query" rel="next"' in by_query  # the order is kept across pages
    reverse_query = client.get(url + "?sort=-query").content.decode()
    assert "who is she" in reverse_query and "what is a synapse" not in reverse_query
    assert 'aria-sort="descending"><a href="?sort=query">Query' in reverse_query  # a click again reverses
    assert 'href="?sort=run-0">a</a>' in by_query and 'href="?sort=run-1">b</a>' in by_query


def test_pool_sort_keys_put_qids_in_natural_order_and_missing_rab_last():
    from django.test import RequestFactory

    from core.web.paging import table_page
    from pooling.views import pool_sort_keys

    rows = [
        {"qid": "10", "query": "b", "rab": {"a": 0.5}, "lists": ["a:female"]},
        {"qid": "2", "query": "A", "rab": {}, "lists": ["b:male"]},
        {"qid": "9", "query": "c", "rab": {"a": -0.25}, "lists": ["a:male"]},
    ]

    def order(sort: str) -> list[str]:
        request = RequestFactory().get("/", {"sort": sort})
        return [
            row["qid"]
            for row in table_page(request, rows, lambda row: row["qid"], sort_keys=pool_sort_keys(["a"])).rows
        ]

    assert order("qid") == ["2", "9", "10"]  # not "10" < "2" as text
    assert order("-qid") == ["10", "9", "2"]
    assert order("run-0") == ["9", "10", "2"]  # the run lacks query 2: after the others going up
    assert order("query") == ["2", "10", "9"]  # case-insensitive
    assert order("run-9") == ["10", "2", "9"]  # an unknown column keeps the pool's own order


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
    assert csv[0] == "qid,query,RaB@2:a,RaB@2:b,lists,notes"
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
    form = {"name": "p", "queries": "q", "runs": ["a"], "rank_cutoff": 2, "depth": 1, "magnitude": "tf"}
    refused = client.post(reverse("pooling:pool-create"), {**form, "tokenizer": "words"})
    assert refused.status_code == 200 and "a pool or query set with this name exists" in refused.content.decode()
    assert not Job.objects.exists()  # a taken name is refused on the form, before any job
    # A pool whose name was taken after the form was checked fails in the task, with the reason.
    settings = services.PoolSettings(2, 1, "tf", "words")
    with pytest.raises(Exception, match="already exists"), django_capture_on_commit_callbacks(execute=True):
        services.start_pool("p", pool.queries, [Run.objects.get(name="a")], settings)
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
    # ?q= filters as the pages' search box does: qid or text, any case.
    synapse = client.get("/api/pooling/pools/p/entries/?q=SYNAPSE").json()["results"]
    assert {(e["qid"], e["run"]) for e in synapse} == {("2", "a"), ("2", "b")}
    assert [q["qid"] for q in client.get("/api/pooling/query-sets/q/queries/?q=3").json()["results"]] == ["3"]


@pytest.mark.django_db
def test_csv_and_tsv_downloads_neutralise_formulas(client, admin_user, pool):
    """A search-log query such as ``=HYPERLINK(...)`` is text in the CSV and in the TSV download: both open
    in a spreadsheet (the TSV kept it verbatim: issue 68). The batch export's TSV, the query file for
    rankers, stays verbatim (docs/dataset-publishing.md)."""
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
    Query.objects.filter(qid="2").update(text="-ve blood type\twith a tab")
    tsv = client.get(reverse("pooling:pool-download", args=["p", "tsv"])).content.decode()
    assert f"1\t'{formula}\n" in tsv
    assert "2\t'-ve blood type with a tab\n" in tsv
    assert not any(cell.startswith(("=", "+", "-", "@")) for line in tsv.splitlines() for cell in line.split("\t"))


def test_api_builds_a_pool_as_a_job_with_the_forms_rules(
    client, django_user_model, world, django_capture_on_commit_callbacks
):
    from core.models import Job
    from pooling.models import Pool

    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    body = {"name": "api-pool", "queries": "q", "runs": ["a", "b"], "rank_cutoff": 2, "depth": 2}
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/pooling/pools/", body, content_type="application/json")
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.json()["id"])
    assert response["Location"] == f"/api/jobs/{job.pk}/"
    assert job.kind == "pool" and job.status == Job.Status.DONE, job.message
    assert sorted(Pool.objects.get(name="api-pool").runs.values_list("name", flat=True)) == ["a", "b"]

    taken = client.post("/api/pooling/pools/", body, content_type="application/json")
    assert taken.status_code == 400 and taken.json() == {"name": ["a pool or query set with this name exists"]}
    for change, field in (({"runs": ["zz"]}, "runs"), ({"depth": 0}, "depth"), ({"queries": "nope"}, "queries")):
        refused = client.post("/api/pooling/pools/", {**body, "name": "p2", **change}, content_type="application/json")
        assert refused.status_code == 400 and list(refused.json()) == [field], refused.json()
    assert client.post("/api/pooling/pools/", [1], content_type="application/json").status_code == 400
    assert Job.objects.filter(kind="pool").count() == 1

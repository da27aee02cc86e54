"""REST API: staff see batches and everything; annotators only their own work; schema builds."""

import pytest

from core.models import Job
from platforms.inhouse.services.annotators import local_worker
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from pooling.models import QuerySet
from tests.annotation.conftest import answers_for, make_batch


@pytest.fixture
def answered(local_batch, annotators):
    for user in annotators[:2]:
        while (assignment := next_assignment(user, local_batch)) is not None:
            submit_local_assignment(assignment, answers_for(assignment))
    return local_batch


def test_staff_see_batches_progress_hits_and_agreement(answered, researcher, client):
    client.force_login(researcher)
    batches = client.get("/api/annotation/batches/").json()["results"]
    assert [b["name"] for b in batches] == ["b1"]
    assert batches[0]["cost"]["total"] == "0.20"
    progress = client.get("/api/annotation/batches/b1/progress/").json()
    assert (progress["submitted"], progress["hits"], progress["judgments"]) == (4, 2, 12)
    hits = client.get("/api/annotation/batches/b1/hits/").json()["results"]
    assert [len(h["queries"]) for h in hits] == [3, 3]
    report = client.get("/api/annotation/batches/b1/agreement/").json()
    assert report["krippendorff_alpha"] == 1.0 and report["workers"] == 2
    judgments = client.get("/api/annotation/judgments/?batch=b1").json()
    assert judgments["count"] == 12
    assert all(j["worker"].startswith("w-") for j in judgments["results"])


def test_annotators_cannot_reach_batches_but_see_their_own_judgments(answered, annotators, client):
    client.force_login(annotators[0])
    assert client.get("/api/annotation/batches/").status_code == 403
    assert client.get("/api/annotation/hits/").status_code == 403
    assert client.get("/api/annotation/exports/").status_code == 403
    judgments = client.get("/api/annotation/judgments/").json()
    assert judgments["count"] == 6
    assignments = client.get("/api/annotation/assignments/").json()["results"]
    assert {a["worker"] for a in assignments} == {local_worker(annotators[0]).pseudonym}


def test_anonymous_requests_are_refused(answered, client):
    assert client.get("/api/annotation/judgments/").status_code == 403


def test_export_through_the_api(answered, researcher, client, settings):
    client.force_login(researcher)
    response = client.post(
        "/api/annotation/batches/b1/export/",
        {"category": "non-gendered", "format": "csv", "as_query_set": "ng-api"},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    data = response.json()
    assert data["queries"] == 2 and data["query_set"] == "ng-api"
    assert "path" not in data and "card_path" not in data  # the file comes over HTTP, not as a server path
    download = client.get(data["download"])
    assert download["Content-Disposition"] == 'attachment; filename="b1-non-gendered.csv"'
    rows = b"".join(download.streaming_content).decode().splitlines()
    assert rows[0] == "qid,query,label,adjudicated,ds_posterior,label_source,machine_confidence"
    assert sorted(row.rsplit(",", 4)[0] for row in rows[1:]) == ["101,what is a synapse,n", "105,how to boil an egg,n"]
    assert all(row.endswith(",crowd majority,") for row in rows[1:])  # the label source; no machine confidence
    assert all(row.split(",")[3] == "false" and 0.5 < float(row.split(",")[4]) <= 1 for row in rows[1:])
    card = b"".join(client.get(data["card_download"]).streaming_content).decode()
    assert "b1: Non-gendered queries" in card
    assert QuerySet.objects.get(name="ng-api").queries.count() == 2
    bad = client.post("/api/annotation/batches/b1/export/", {"category": "neutral"}, content_type="application/json")
    assert bad.status_code == 400


def test_publish_through_the_api_runs_as_a_job(query_set, researcher, client, django_capture_on_commit_callbacks):
    make_batch(query_set, name="api-pub")
    client.force_login(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/annotation/batches/api-pub/publish/")
    assert response.status_code == 202
    job = Job.objects.get(pk=response.json()["id"])
    assert job.status == Job.Status.DONE and job.result["published"] == 2
    assert client.get(response["Location"]).json()["status"] == "done"


def test_schema_builds(researcher, client):
    client.force_login(researcher)
    response = client.get("/api/schema/")
    assert response.status_code == 200
    assert b"/api/annotation/batches/{name}/agreement/" in response.content

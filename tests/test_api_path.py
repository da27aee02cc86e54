"""The researcher's whole path through the API alone, with a token, from an empty site.

Upload a collection, queries and two runs; pool them; create a batch from the pool;
publish it to in-house annotators (who answer on their pages); sync it; read the
agreement; settle the disputed query; export the non-gendered queries and download them;
build a report on the exported set. Every step is an HTTP request with
``Authorization: Token ...``; long work comes back as a job to poll.
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from core.services.api_tokens import api_token
from metrics.models import Report
from platforms.inhouse.services.annotators import create_annotator
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from pooling.models import Collection

PASSAGES = {
    "d1": "She and her sister",
    "d2": "He met his father",
    "d3": "nothing gendered here",
    "d4": "the man and the woman",
}
QUERIES = {"1": "who is she", "2": "what is a synapse", "3": "who is he"}
RUNS = {
    "bm25": {"1": ["d1", "d3"], "2": ["d3", "d4"], "3": ["d2", "d1"]},
    "bert": {"1": ["d3", "d1"], "2": ["d2"], "3": ["d4", "d3"]},
}
#: Two annotators; they disagree on query 1, which the researcher then settles.
ANSWERS = {"alice": {"1": "f", "2": "n", "3": "m"}, "bob": {"1": "o", "2": "n", "3": "m"}}


def _trec(rankings: dict) -> bytes:
    lines = (f"{q} Q0 {d} {r} {10 - r} t\n" for q, docs in rankings.items() for r, d in enumerate(docs, start=1))
    return "".join(lines).encode()


@pytest.mark.django_db
def test_the_researchers_path_through_the_api(client, django_user_model, django_capture_on_commit_callbacks):
    researcher = django_user_model.objects.create_user("researcher", password="pw-secret-123", is_staff=True)
    auth = {"HTTP_AUTHORIZATION": f"Token {api_token(researcher)}"}
    assert not Collection.objects.exists()

    def post(url, data=None, *, multipart=False, expected=(200, 201, 202)):
        kwargs = {} if multipart else {"content_type": "application/json"}
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(url, data or {}, **kwargs, **auth)
        assert response.status_code in expected, (url, response.status_code, response.content)
        body = response.json()
        if response.status_code == 202 and "id" in body:  # a job: it ran (eagerly) and is done
            job = client.get(f"/api/jobs/{body['id']}/", **auth).json()
            assert job["status"] == "done", job
        return body

    def upload(kind, name, filename, content, **fields):
        post(
            f"/api/pooling/imports/{kind}/",
            {"name": name, "file": SimpleUploadedFile(filename, content), **fields},
            multipart=True,
        )

    upload("collection", "tiny", "collection.tsv", "".join(f"{p}\t{t}\n" for p, t in PASSAGES.items()).encode())
    upload("queries", "q", "queries.tsv", "".join(f"{q}\t{t}\n" for q, t in QUERIES.items()).encode())
    for name, rankings in RUNS.items():
        upload("run", name, f"{name}.trec", _trec(rankings), collection="tiny")

    post("/api/pooling/pools/", {"name": "p", "queries": "q", "runs": ["bm25", "bert"], "rank_cutoff": 2, "depth": 2})
    pooled = client.get("/api/pooling/query-sets/p/queries/", **auth).json()["results"]
    assert sorted(q["qid"] for q in pooled) == ["1", "2", "3"]

    batch_form = {"name": "b", "pool": "p", "provider": "local", "assignments_per_query": 2, "queries_per_hit": 3}
    post("/api/annotation/batches/", {**batch_form, "reward": "0.10", "gold_per_hit": 0})
    post("/api/annotation/batches/b/publish/")
    for username, answers in ANSWERS.items():  # annotators answer on their pages, not through the API
        user = create_annotator(username)
        assignment = next_assignment(user)
        labels = {hq.batch_query.qid: hq.field_name for hq in assignment.hit.hit_queries.select_related("batch_query")}
        submit_local_assignment(assignment, {labels[q]: a for q, a in answers.items()})

    post("/api/annotation/batches/b/sync/", {"approve_all": True})
    assert client.get("/api/annotation/batches/b/", **auth).json()["status"] == "completed"
    agreement = client.get("/api/annotation/batches/b/agreement/", **auth).json()
    assert agreement["set_aside"] == ["1"] and agreement["judgments"] == 6

    post("/api/annotation/batches/b/adjudicate/", {"qid": "1", "label": "female", "reason": "asks about a woman"})
    export = post(
        "/api/annotation/batches/b/export/", {"category": "non-gendered", "format": "tsv", "as_query_set": "ng"}
    )
    download = client.get(export["download"], **auth)
    assert b"".join(download.streaming_content).decode() == "2\twhat is a synapse\n"
    female = post("/api/annotation/batches/b/export/", {"category": "female", "format": "jsonl"})
    assert b'"adjudicated": true' in b"".join(client.get(female["download"], **auth).streaming_content)

    post("/api/metrics/reports/", {"name": "ng-bias", "queries": "ng", "runs": ["bm25", "bert"], "cutoffs": "1,2"})
    report = client.get("/api/metrics/reports/ng-bias/", **auth).json()
    assert report["query_set"] == "ng" and Report.objects.get(name="ng-bias").results.exists()
    assert {r["run"] for r in report["results"]} == {"bm25", "bert"}

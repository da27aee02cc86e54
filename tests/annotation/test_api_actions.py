"""The API does every step of the batch page: publish, sync, escalate, cancel, each refused
with JSON and a 4xx in the wrong state; every error is JSON; `.json` suffixes work; token auth."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from annotation.models import Batch, Hit
from core.models import Job
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import answers_for, make_batch


def _post(client, url, data=None, **extra):
    return client.post(url, data or {}, content_type="application/json", **extra)


@pytest.fixture
def staff(client, researcher):
    client.force_login(researcher)
    return client


def test_publish_and_sync_are_jobs_and_refused_with_409_in_the_wrong_state(
    query_set, staff, django_capture_on_commit_callbacks
):
    batch = make_batch(query_set)
    sync_draft = _post(staff, "/api/annotation/batches/b1/sync/")
    assert sync_draft.status_code == 409 and sync_draft.json() == {"detail": "batch 'b1' is draft"}
    with django_capture_on_commit_callbacks(execute=True):
        published = _post(staff, "/api/annotation/batches/b1/publish/")
    assert published.status_code == 202
    assert Job.objects.get(pk=published.json()["id"]).status == Job.Status.DONE
    batch.refresh_from_db()
    assert batch.status == Batch.Status.PUBLISHED and batch.hits.exclude(provider_id=None).count() == 2

    Batch.objects.filter(pk=batch.pk).update(status=Batch.Status.COMPLETED)
    refused = _post(staff, "/api/annotation/batches/b1/publish/")
    assert refused.status_code == 409 and refused.json() == {"detail": "batch 'b1' is completed"}
    cancel = _post(staff, "/api/annotation/batches/b1/cancel/")
    assert cancel.status_code == 409 and "nothing to cancel" in cancel.json()["detail"]
    assert Job.objects.filter(kind="annotation.publish").count() == 1  # the refusals queued nothing


def test_cancel_withdraws_open_hits_and_repeating_it_is_harmless(local_batch, staff):
    first = _post(staff, "/api/annotation/batches/b1/cancel/")
    assert first.status_code == 200 and first.json() == {"batch": "b1", "status": "cancelled", "expired_hits": 2}
    assert set(Hit.objects.values_list("status", flat=True)) == {Hit.Status.EXPIRED}
    again = _post(staff, "/api/annotation/batches/b1/cancel/")
    assert again.json() == {"batch": "b1", "status": "cancelled", "expired_hits": 0}
    assert _post(staff, "/api/annotation/batches/b1/escalate/").status_code == 409


def test_escalate_adds_one_assignment_to_hits_with_a_disputed_query(
    local_batch, annotators, staff, django_capture_on_commit_callbacks
):
    nothing = _post(staff, "/api/annotation/batches/b1/escalate/")
    assert nothing.status_code == 409 and "no finished HIT" in nothing.json()["detail"]
    for index, user in enumerate(annotators[:2]):
        while (assignment := next_assignment(user, local_batch)) is not None:
            override = {"101": "f"} if index == 1 else None  # one disputed query
            submit_local_assignment(assignment, answers_for(assignment, override=override))
    below = _post(staff, "/api/annotation/batches/b1/escalate/", {"max_assignments": 1})
    assert below.status_code == 400 and "below the batch's 2 assignments" in below.json()["detail"]
    with django_capture_on_commit_callbacks(execute=True):
        started = _post(staff, "/api/annotation/batches/b1/escalate/", {"max_assignments": 3})
    assert started.status_code == 202, started.content
    disputed = local_batch.hits.get(hit_queries__batch_query__qid="101")
    assert started.json()["hits"] == [disputed.position] and started.json()["cost"] == "0.05"
    assert Job.objects.get(pk=started.json()["id"]).status == Job.Status.DONE
    assert {h.pk: h.max_assignments for h in local_batch.hits.all()} == {
        h.pk: 3 if h.pk == disputed.pk else 2 for h in local_batch.hits.all()
    }


@pytest.mark.parametrize(
    "url",
    [
        "/api/annotation/batches/b1/progress.json",
        "/api/annotation/batches/b1/agreement.json",
        "/api/annotation/batches/b1/workers.json",
        "/api/annotation/batches/b1/hits.json",
        "/api/annotation/batches.json",
    ],
)
def test_format_suffixes_answer_json(local_batch, staff, url):
    response = staff.get(url)
    assert response.status_code == 200 and response["Content-Type"] == "application/json"


def test_every_error_is_json_with_a_4xx(local_batch, staff, client, annotators):
    cases = [
        (staff.get("/api/annotation/batches/nope/"), 404),
        (staff.get("/api/annotation/batches/b1/progress.xml"), 404),
        (_post(staff, "/api/annotation/batches/b1/adjudicate/", {"qid": "101"}), 400),
        (_post(staff, "/api/annotation/batches/b1/adjudicate/", {"qid": "999", "label": "n", "reason": "r"}), 400),
        (_post(staff, "/api/annotation/batches/b1/escalate/", {"max_assignments": "many"}), 400),
        (_post(staff, "/api/annotation/batches/b1/adjudicate/", "[1, 2"), 400),
        (_post(staff, "/api/annotation/batches/b1/escalate/", "[1, 2]"), 400),
        (staff.delete("/api/annotation/batches/b1/"), 405),
        (staff.get("/api/annotation/no-such-endpoint/"), 404),
        (staff.get("/api/annotation/batches/b1/progress/extra/"), 404),
        (Client().get("/api/annotation/batches/"), 403),
    ]
    annotator = Client()
    annotator.force_login(annotators[0])
    cases.append((_post(annotator, "/api/annotation/batches/b1/publish/"), 403))
    for response, status in cases:
        assert response.status_code == status, (response.request["PATH_INFO"], response.content)
        assert response["Content-Type"] == "application/json"
        body = response.json()
        assert isinstance(body, dict) and body, body
    page = staff.get("/annotation/no-such-page/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")  # pages stay pages


def test_a_researcher_token_opens_the_api_and_basic_auth_is_gone(local_batch, researcher, annotators):
    out = StringIO()
    call_command("api_token", "researcher", stdout=out)
    key = out.getvalue().strip()
    assert len(key) == 40  # the format DRF's tokens had
    with pytest.raises(CommandError, match="already has an API token"):
        call_command("api_token", "researcher", stdout=StringIO())  # shown once: never printed again
    anonymous = Client()
    ok = anonymous.get("/api/annotation/batches/", HTTP_AUTHORIZATION=f"Token {key}")
    assert ok.status_code == 200 and ok.json()["count"] == 1
    # Token requests carry no session: no CSRF token needed to start work.
    assert _post(anonymous, "/api/annotation/batches/b1/cancel/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200

    renewed = StringIO()
    call_command("api_token", "researcher", "--renew", stdout=renewed)
    assert renewed.getvalue().strip() != key
    stale = anonymous.get("/api/annotation/batches/", HTTP_AUTHORIZATION=f"Token {key}")
    # 403, not 401: sessions come first, and they send no WWW-Authenticate challenge.
    assert stale.status_code == 403 and stale.json() == {"detail": "Invalid token."}

    import base64

    basic = base64.b64encode(b"researcher:pw-secret-123").decode()
    assert anonymous.get("/api/annotation/batches/", HTTP_AUTHORIZATION=f"Basic {basic}").status_code == 403
    with pytest.raises(CommandError, match="not an active researcher"):
        call_command("api_token", annotators[0].username)
    with pytest.raises(CommandError, match="no account named 'ghost'"):
        call_command("api_token", "ghost")


@pytest.mark.parametrize(
    "url", ["/api/annotation/batches/", "/api/annotation/batches/estimate/", "/api/pooling/imports/queries/"]
)
def test_a_json_list_body_is_a_400_not_a_500(local_batch, staff, url):
    """Found by schemathesis: the forms behind these endpoints cannot read a JSON list."""
    response = _post(staff, url, "[null, null]")
    assert response.status_code == 400 and "JSON object" in response.json()["detail"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/annotation/batches/", {"name": "typo", "queries": "gq", "assignments_per_querry": 5}, "assignments_per_querry"),
        ("/api/annotation/batches/estimate/", {"queries": "gq", "reward_per_hit": "0.05"}, "reward_per_hit"),
        ("/api/annotation/annotators/", {"username": "new-one", "acess": "password"}, "acess"),
        ("/api/annotation/batches/b1/escalate/", {"max_assignment": 3}, "max_assignment"),
        ("/api/pooling/pools/", {"name": "p", "queries": "gq", "runz": "a"}, "runz"),
        ("/api/metrics/reports/", {"name": "r", "queries": "gq", "runs": "a", "cutof": "10"}, "cutof"),
    ],
)  # fmt: skip
def test_an_unknown_field_on_a_create_endpoint_is_a_400_naming_it(local_batch, staff, path, body, field):
    """Issue 53: unknown fields were dropped unseen (``assignments_per_querry`` made a batch with the default)."""
    from django.contrib.auth import get_user_model

    answer = _post(staff, path, body)
    assert answer.status_code == 400, (path, answer.content)
    assert field in answer.json(), answer.json()
    assert not Batch.objects.filter(name="typo").exists()
    assert not get_user_model().objects.filter(username="new-one").exists()

"""A crowd provider that refuses or fails is never a 500: MTurk's and Prolific's errors are
``ServiceError``s (``core.errors.ProviderError``), shown with their message on the batch page
and answered by the API as JSON, 502 when the provider failed and 400 when it refused.

Cancelling is the provider call a page and the API make while the researcher waits; the
test servers (fake_mturk.py, fake_prolific.py) refuse, throttle or fail it on cue."""

import functools
from decimal import Decimal

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError, ReadTimeoutError
from django.contrib.messages import get_messages
from django.urls import reverse

from annotation import services
from annotation.models import Batch, Hit
from core.errors import ProviderError, ServiceError
from core.models import Job
from platforms.mturk import client as mturk
from platforms.mturk.errors import MTurkError
from platforms.prolific.client import Prolific, ProlificError, ProlificUnknownOutcome
from tests.platforms.mturk import fake_server as fake_mturk
from tests.platforms.prolific import fake_server as fake_prolific
from tests.platforms.prolific.test_prolific import PROJECT, make_prolific_batch


@pytest.fixture
def mturk_server(settings, monkeypatch):
    """The MTurk-compatible test server, as the site's MTurk provider reaches it."""
    fake = fake_mturk.FakeMTurk()
    url, http = fake_mturk.serve(fake)
    settings.MTURK_ENDPOINT_URL, settings.MTURK_LIVE, settings.MTURK_MAX_CALLS_PER_SECOND = url, False, 0
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    yield fake
    http.shutdown()


@pytest.fixture
def prolific_server(settings):
    """The Prolific-compatible test server, as the site's Prolific provider reaches it."""
    fake = fake_prolific.FakeProlific()
    url, http = fake_prolific.serve(fake)
    settings.PROLIFIC_API_URL, settings.PROLIFIC_API_TOKEN = f"{url}/api/v1/", fake_prolific.TOKEN
    settings.PROLIFIC_PROJECT_ID, settings.PROLIFIC_WORKSPACE_ID = PROJECT, "workspace-1"
    settings.PROLIFIC_COMPLETION_URL, settings.SITE_URL = f"{url}/submissions/complete?cc=", "http://testserver"
    yield fake
    http.shutdown()


def _client_error(status: int, code: str, message: str = "no") -> ClientError:
    response = {"Error": {"Code": code, "Message": message}, "ResponseMetadata": {"HTTPStatusCode": status}}
    return ClientError(response, "UpdateExpirationForHIT")


@pytest.mark.parametrize(
    ("exc", "upstream"),
    [
        (_client_error(400, "RequestError"), False),
        (_client_error(500, "ServiceFault"), True),
        (_client_error(503, "SomethingElse"), True),
        (_client_error(400, "ThrottlingException"), True),
        (EndpointConnectionError(endpoint_url="https://mturk.example"), True),
        (ReadTimeoutError(endpoint_url="https://mturk.example"), True),
        (NoCredentialsError(), False),
    ],
)
def test_mturk_errors_are_service_errors_and_say_whether_mturk_failed(exc, upstream):
    error = MTurkError.from_botocore(exc, "UpdateExpirationForHIT")
    assert isinstance(error, ProviderError) and isinstance(error, ServiceError)
    assert error.upstream is upstream


def test_prolific_errors_are_service_errors_and_say_whether_prolific_failed():
    assert isinstance(ProlificError("x"), ServiceError)
    assert not ProlificError("Invalid token.", 401).upstream and not ProlificError("token not set").upstream
    assert ProlificError("Bad gateway", 502).upstream and ProlificError("throttled", 429).upstream
    assert ProlificError("no answer", upstream=True).upstream and ProlificUnknownOutcome("lost").upstream


# -- MTurk: the page and the API ------------------------------------------------------------------
@pytest.fixture
def mturk_batch(mturk_server, query_set, monkeypatch):
    """A published MTurk batch (two open HITs) on the test server; botocore does not retry, so a
    scripted fault is the final answer at once."""
    monkeypatch.setattr(mturk, "make_client", functools.partial(mturk.make_client, max_attempts=0))
    batch = services.create_batch(
        "mt",
        services.BatchSettings(provider="mturk", assignments_per_query=2, queries_per_hit=3, reward=Decimal("0.05")),
        query_set=query_set,
    )
    services.publish_batch(batch)
    batch.refresh_from_db()
    return batch


def _still_open(batch: Batch) -> None:
    batch.refresh_from_db()
    assert batch.status == Batch.Status.PUBLISHED
    assert batch.hits.filter(status=Hit.Status.OPEN).count() == 2


@pytest.mark.parametrize(
    ("fault", "status", "said"),
    [
        ("refuse", 400, "MTurk refused UpdateExpirationForHIT: the request was refused (scripted fault)"),
        ("lose_response", 502, "MTurk refused UpdateExpirationForHIT: the response was lost [ServiceFault]"),
        ("throttle", 502, "still throttled"),
    ],
)
def test_cancel_through_the_api_when_mturk_refuses_or_fails(
    mturk_server, mturk_batch, researcher, client, fault, status, said
):
    fake = mturk_server
    fake.faults["UpdateExpirationForHIT"] = [fault]
    client.force_login(researcher)
    response = client.post("/api/annotation/batches/mt/cancel/")
    assert response.status_code == status
    assert said in response.json()["detail"]
    _still_open(mturk_batch)
    # Once MTurk answers again, the same request cancels the batch.
    again = client.post("/api/annotation/batches/mt/cancel/")
    assert again.status_code == 200 and again.json()["expired_hits"] == 2


@pytest.mark.parametrize("fault", ["refuse", "lose_response"])
def test_cancel_on_the_page_when_mturk_refuses_or_fails_shows_why(mturk_server, mturk_batch, researcher, client, fault):
    fake = mturk_server
    fake.faults["UpdateExpirationForHIT"] = [fault]
    client.force_login(researcher)
    response = client.post(reverse("annotation:batch-cancel", args=["mt"]), follow=True)
    assert response.status_code == 200
    assert response.redirect_chain == [(reverse("annotation:batch-detail", args=["mt"]), 302)]
    shown = [str(m) for m in get_messages(response.wsgi_request)] + [response.content.decode()]
    assert any("MTurk refused UpdateExpirationForHIT" in text for text in shown)
    _still_open(mturk_batch)


# -- Prolific: the page and the API ---------------------------------------------------------------
@pytest.fixture
def prolific_batch(prolific_server, query_set):
    batch = make_prolific_batch(query_set)
    services.publish_batch(batch)
    batch.refresh_from_db()
    assert prolific_server.studies[batch.hit_type_id]["status"] == "ACTIVE"
    return batch


def test_cancel_through_the_api_when_prolific_fails_is_a_502_and_the_study_still_runs(
    prolific_server,
    prolific_batch,
    researcher,
    client,
):
    prolific_server.faults["transition_study"] = ["error"] * 3  # each STOP answered 502 (it may have been done)
    client.force_login(researcher)
    response = client.post("/api/annotation/batches/pro/cancel/")
    assert response.status_code == 502
    assert "Prolific did not STOP study" in response.json()["detail"]
    assert prolific_server.studies[prolific_batch.hit_type_id]["status"] == "ACTIVE"
    prolific_batch.refresh_from_db()
    assert prolific_batch.status == Batch.Status.PUBLISHED


def test_cancel_with_a_wrong_prolific_token_is_a_400_on_the_api_and_a_message_on_the_page(
    prolific_server,
    prolific_batch,
    researcher,
    client,
    settings,
):
    settings.PROLIFIC_API_TOKEN = "wrong"
    client.force_login(researcher)
    response = client.post("/api/annotation/batches/pro/cancel/")
    assert response.status_code == 400
    assert "Prolific GET" in response.json()["detail"] and "HTTP 401" in response.json()["detail"]
    page = client.post(reverse("annotation:batch-cancel", args=["pro"]), follow=True)
    assert page.status_code == 200 and "HTTP 401" in page.content.decode()


def test_a_prolific_that_never_answers_is_a_502(settings, researcher, client, query_set, monkeypatch):
    """No server at all (the connection is refused): after the retries, a 502 naming Prolific."""
    batch = make_prolific_batch(query_set)
    Batch.objects.filter(pk=batch.pk).update(status=Batch.Status.PUBLISHED, hit_type_id="study-1")
    for hit in batch.hits.all():
        Hit.objects.filter(pk=hit.pk).update(provider_id=f"prolific-{hit.pk}", status=Hit.Status.OPEN)
    settings.PROLIFIC_API_URL = "http://127.0.0.1:9/api/v1/"  # the discard port: nothing listens
    settings.PROLIFIC_API_TOKEN = "token"
    monkeypatch.setitem(Prolific.__init__.__kwdefaults__, "sleep", lambda seconds: None)  # retry at once
    client.force_login(researcher)
    response = client.post("/api/annotation/batches/pro/cancel/")
    assert response.status_code == 502 and "Prolific GET" in response.json()["detail"]
    assert "no answer" in response.json()["detail"]


# -- Publishing while the researcher waits (no broker: the job runs in the request) ---------------
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("fault", "status"), [("refuse", 400), ("lose_response", 502)])
def test_publishing_when_mturk_refuses_or_fails_is_a_message_and_json_not_a_500(
    mturk_server, query_set, researcher, client, monkeypatch, fault, status
):
    monkeypatch.setattr(mturk, "make_client", functools.partial(mturk.make_client, max_attempts=0))
    services.create_batch(
        "mt",
        services.BatchSettings(provider="mturk", assignments_per_query=2, queries_per_hit=3, reward=Decimal("0.05")),
        query_set=query_set,
    )
    client.force_login(researcher)
    mturk_server.faults["CreateHITType"] = [fault, fault]

    page = client.post(reverse("annotation:batch-publish", args=["mt"]), follow=True)
    assert page.redirect_chain == [(reverse("annotation:batch-detail", args=["mt"]), 302)]
    assert "MTurk refused CreateHITType" in page.content.decode()

    api = client.post("/api/annotation/batches/mt/publish/")
    assert api.status_code == status and "MTurk refused CreateHITType" in api.json()["detail"]
    assert Job.objects.filter(status=Job.Status.FAILED).count() == 2
    assert not mturk_server.hits

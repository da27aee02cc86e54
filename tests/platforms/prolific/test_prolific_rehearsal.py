# ruff: noqa: F811  (the fixtures of the other Prolific tests, imported by name)
"""A Prolific batch rehearsed with Prolific's test participants before paying (issue 56).

The Prolific-compatible server offers the reference's "Create a test participant for a researcher"
and "Create a test study" (a test study made from a draft, published to the workspace's test
participants; one test participant per researcher account, as Prolific's help says). A test
participant follows the test study's link to the site's real pages; what is expected: the batch
stays a draft, nothing the test participant answers is recorded, each create happens once under
throttling, errors and lost answers, and publishing afterwards publishes the same draft study.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import Assignment, Batch, Judgment, Worker
from core.errors import StateError
from platforms.prolific.models import ProlificSession
from platforms.prolific.rehearsal import services as rehearsals
from tests.platforms.prolific.fake_server import hexid
from tests.platforms.prolific.test_prolific import (  # noqa: F401
    _publish,
    batch,
    client_class,
    make_prolific_batch,
    provider,
    server,
    sleeps,
)

EMAIL = "researcher+test@example.org"


def _test_participant_takes_part(fake, study_id: str, client_class) -> tuple[str, object]:
    participant = next(iter(fake.test_participants.values()))
    session, url = fake.start(study_id, participant)
    browser = client_class()
    parts = urlsplit(url)
    arrival = browser.get(f"{parts.path}?{parts.query}")
    assert arrival.status_code == 302 and arrival["Location"].endswith("/rehearsal/"), arrival.content[:300]
    page = browser.get(arrival["Location"])
    assert page.status_code == 200 and b"<form" in page.content
    fields = sorted({f for f in page.content.decode().split('name="')[1:] if f.startswith("q-")})
    answers = {field.split('"')[0]: "n" for field in fields}
    assert answers
    done = browser.post(arrival["Location"], answers)
    assert done.status_code == 302 and f"cc={fake.studies[study_id]['completion_codes'][0]['code']}" in done["Location"]
    fake.set_status(session, "AWAITING REVIEW")
    return session, browser


def test_a_rehearsal_runs_the_batch_with_test_participants_and_records_nothing(
    server, batch, client_class, settings, capsys
):
    settings.PROLIFIC_WEBHOOKS = False
    call_command("prolific_rehearse", batch.name, "--email", EMAIL)
    out = capsys.readouterr().out
    batch.refresh_from_db()
    assert batch.status == Batch.Status.DRAFT  # nothing published to real participants
    draft = server.studies[batch.hit_type_id]
    assert draft["status"] == "UNPUBLISHED"
    (test_study,) = server.test_studies
    assert f"Test study {test_study} (created)" in out and "--finish" in out
    assert rehearsals.rehearsal_study_id(batch) == test_study
    assert len(server.test_participants) == 1

    session, _ = _test_participant_takes_part(server, test_study, client_class)
    assert "get_submission" in server.calls  # the real arrival check
    assert not Assignment.objects.exists() and not Judgment.objects.exists()
    assert not Worker.objects.exists() and not ProlificSession.objects.exists()

    # Again: kept, nothing made twice.
    call_command("prolific_rehearse", batch.name, "--email", EMAIL)
    assert "(kept)" in capsys.readouterr().out
    assert [server.calls.count(c) for c in ("create_study", "create_test_participant", "create_test_study")] == [
        1,
        1,
        1,
    ]

    call_command("prolific_rehearse", batch.name, "--finish")
    assert "1 test submission(s) approved" in capsys.readouterr().out
    assert server.submissions[session]["status"] == "APPROVED" and server.studies[test_study]["status"] == "COMPLETED"

    # Publishing afterwards publishes the same draft study: one real study, still no rehearsal data.
    _publish(batch, None)
    assert batch.status == Batch.Status.PUBLISHED and draft["status"] == "ACTIVE"
    assert server.calls.count("create_study") == 1
    with pytest.raises(StateError, match="a rehearsal comes before publishing"):
        rehearsals.rehearse(batch)


def test_each_create_of_a_rehearsal_happens_once_under_throttling_errors_and_lost_answers(
    server, query_set, provider, settings
):
    settings.PROLIFIC_WEBHOOKS = False
    batch = make_prolific_batch(query_set, name="rehearse2")
    server.faults["create_study"] = ["throttle"]
    server.faults["create_test_participant"] = ["throttle", "lose_response"]
    server.faults["create_test_study"] = ["throttle", "lose_response"]
    done = rehearsals.rehearse(batch, email=EMAIL, provider=provider)
    # The test participant's answer was lost: never asked again (a second would be refused anyway).
    assert server.calls.count("create_test_participant") == 2 and len(server.test_participants) == 1
    assert done.test_participant_id == ""
    # The test study's answer was lost: found among the project's studies, not made twice.
    (test_study,) = server.test_studies
    assert (done.study_id, done.outcome) == (test_study, "created")
    assert server.calls.count("create_test_study") == 2  # the 429 (not carried out), then the lost one

    again = rehearsals.rehearse(Batch.objects.get(pk=batch.pk), email=EMAIL, provider=provider)
    assert (again.study_id, again.outcome) == (test_study, "kept") and len(server.test_studies) == 1

    # A 502 (Prolific failed, maybe after doing it): looked up too.
    server.faults["create_test_study"] = ["error"]
    server.studies[batch.hit_type_id]["status"] = "UNPUBLISHED"
    third = rehearsals.rehearse(Batch.objects.get(pk=batch.pk), again=True, provider=provider)
    assert third.outcome in ("created", "found") and len(server.test_studies) <= 2


def test_the_batch_page_offers_the_rehearsal_and_its_button_starts_it(
    server, batch, client, researcher, settings, django_capture_on_commit_callbacks
):
    settings.PROLIFIC_WEBHOOKS = False
    client.force_login(researcher)
    page = client.get(reverse("annotation:batch-detail", args=[batch.name])).content.decode()
    assert "Rehearse with test participants" in page
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(reverse("annotation:prolific-rehearse", args=[batch.name]), {"email": EMAIL})
    assert answer.status_code == 302 and "/jobs/" in answer["Location"]
    (test_study,) = server.test_studies
    page = client.get(reverse("annotation:batch-detail", args=[batch.name])).content.decode()
    assert test_study in page and "Finish the rehearsal" in page
    assert client.get(reverse("annotation:prolific-rehearse", args=[batch.name])).status_code == 405


def test_a_rehearsal_of_a_signed_study_checks_the_test_participants_token(
    server, query_set, provider, client_class, settings
):
    from platforms.prolific.jwks import services as jwks

    jwks.forget()
    settings.PROLIFIC_WEBHOOKS = False
    server.study_workspace = settings.PROLIFIC_WORKSPACE_ID
    signed = make_prolific_batch(query_set, name="rehearse-signed", signed_urls=True)
    rehearsals.rehearse(signed, email=EMAIL, provider=provider)
    (test_study,) = server.test_studies
    assert server.studies[test_study]["is_external_study_url_secure"] is True
    calls = len(server.calls)
    _test_participant_takes_part(server, test_study, client_class)
    assert "get_submission" not in server.calls[calls:]  # the token, not an API call
    assert not Assignment.objects.exists() and not ProlificSession.objects.exists()
    # A made-up session of the test study without a token is asked about, and refused.
    browser = client_class()
    path = reverse("annotation:prolific-start", args=[signed.name])
    page = browser.get(path, {"PROLIFIC_PID": hexid("nobody"), "STUDY_ID": test_study, "SESSION_ID": hexid("nosuch")})
    assert page.status_code == 403 and "prolific_rehearsal" not in browser.session

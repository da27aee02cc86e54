# ruff: noqa: F811  (the fixtures of the other Prolific tests, imported by name)
"""Webhooks that acknowledge every genuine event, reconciled with Prolific's event log (issue 56).

The Prolific-compatible server follows Prolific's webhook pages: it signs the timestamp and the
body, not the event id ("Verifying"), so events alike sent in the same second carry the same
signature; it redelivers a failed event with the same X-Event-ID ("Idempotency and the X-Event-ID
Header", up to 12 attempts: "Persistent Failures & Disabling Logic"); and it keeps each
subscription's event log (``GET /hooks/subscriptions/{id}/events/``, the reference's
``SubscriptionEventList``) with each event's status. What is expected comes from those pages:
Prolific counts an event delivered only when answered 2xx.
"""

from __future__ import annotations

import json
from collections import Counter

from django.core.management import call_command
from django.urls import reverse

from annotation.models import Assignment
from platforms.prolific.models import ProlificEvent
from platforms.prolific.webhooks.selectors import webhook_status
from platforms.prolific.webhooks.services.deliveries import poll_prolific, recover_missed_events
from tests.platforms.prolific.fake_server import hexid
from tests.platforms.prolific.test_prolific import (  # noqa: F401
    Participant,
    _publish,
    batch,
    client_class,
    make_prolific_batch,
    provider,
    server,
    sleeps,
)
from tests.platforms.prolific.test_prolific_webhooks import hooked, quietly, resyncs  # noqa: F401


def _log(fake) -> list[dict]:
    return [event for events in fake.hook_events.values() for event in events]


def test_events_alike_in_the_same_second_are_all_acknowledged(hooked, provider, batch, client_class):
    """Distinct events of the same body sent in the same second (the server's ``twin``) carry the same
    signature. None is refused: each is recorded once and only re-reads; Prolific's log shows every event
    delivered, and a retry of either is a duplicate."""
    hooked.hook_attempts = 3
    with quietly(hooked):
        _publish(batch, provider)
    people = [Participant(hooked, batch.hit_type_id, hexid(f"ALIKE{i}"), client_class) for i in range(3)]
    assert all(p.arrival.status_code == 302 for p in people)
    alike = Counter()  # per participant: two people's progress events in one second are alike too
    for person in people:
        before = len(hooked.deliveries)
        hooked.hook_faults = ["twin"]
        hooked.set_status(person.session, "RETURNED")
        hooked.wait_for_deliveries()
        alike.update(
            (person.session, d["stamp"], json.dumps(d["payload"], sort_keys=True))
            for d in hooked.deliveries[before:]
            if d["fault"] == "twin"
        )

    twins = [d for d in hooked.deliveries if d["fault"] == "twin"]
    assert len(twins) == 12 and set(alike.values()) == {2}  # signed alike, pairwise, under distinct ids
    assert len({d["event_id"] for d in twins}) == 12
    assert {d["code"] for d in twins} <= {200, 202}, Counter(d["code"] for d in twins)
    log = _log(hooked)
    assert {e["status"] for e in log} == {"SUCCEEDED"}
    assert {d["event_id"] for d in twins} <= set(ProlificEvent.objects.values_list("event_id", flat=True))
    assert all(p.assignment.status == Assignment.Status.ABANDONED for p in people)
    assert recover_missed_events().recovered == 0


def test_a_webhook_lost_in_delivery_is_recovered_from_the_event_log_once(
    hooked, provider, batch, client_class, settings, capsys, client, researcher
):
    with quietly(hooked):
        _publish(batch, provider)
    leaving = Participant(hooked, batch.hit_type_id, hexid("LOST1"), client_class)
    staying = Participant(hooked, batch.hit_type_id, hexid("LOST2"), client_class)
    assert leaving.arrival.status_code == staying.arrival.status_code == 302
    before = ProlificEvent.objects.count()

    hooked.hook_faults = ["drop"]  # both events of the change lost on the way, every attempt
    hooked.set_status(leaving.session, "RETURNED")
    hooked.wait_for_deliveries()
    lost = [e for e in _log(hooked) if e["status"] == "FAILED"]
    assert {e["event_type"] for e in lost} == {"submission.status.change", "study.progress.change"}
    assert ProlificEvent.objects.count() == before
    assert leaving.assignment.status == Assignment.Status.ASSIGNED  # the site never heard

    found = recover_missed_events()
    assert (found.recovered, found.batches, found.error) == (2, [batch.name], "")
    recovered = ProlificEvent.objects.filter(recovered=True)
    assert set(recovered.values_list("event_id", flat=True)) == {e["id"] for e in lost}
    assert leaving.assignment.status == Assignment.Status.ABANDONED  # the re-read freed the place
    assert staying.assignment.status == Assignment.Status.ASSIGNED

    # Once: the log still lists them failed, nothing is applied again.
    jobs = resyncs()
    again = recover_missed_events()
    assert (again.read, again.recovered) == (2, 0) and resyncs() == jobs
    status = webhook_status()
    assert status.behind == 2 and "Webhooks are behind: 2 events Prolific did not deliver" in status.sentence
    client.force_login(researcher)
    page = client.get(reverse("annotation:batch-detail", args=[batch.name])).content.decode()
    assert "Webhooks are behind: 2 events Prolific did not deliver" in page
    # Recovered events never count as delivered: the last verified event is the one before them.
    assert status.last_event is None or status.last_event < recovered.order_by("received").first().received

    # The command says so too.
    hooked.hook_faults = ["drop"]
    hooked.set_status(staying.session, "RETURNED")
    hooked.wait_for_deliveries()
    with quietly(hooked):
        call_command("poll_prolific")
    out = capsys.readouterr().out
    assert "Webhooks behind: 2 event(s) Prolific did not deliver recovered from its event log now" in out
    assert "Webhooks are behind: 4 events" in out
    assert staying.assignment.status == Assignment.Status.ABANDONED


def test_the_event_log_is_read_whole_however_the_server_pages_it(hooked, provider, batch, client_class):
    """The log has no next link nor count (``SubscriptionEventList``) and the server caps ``limit`` at 2: every
    page is read until an empty one."""
    with quietly(hooked):
        _publish(batch, provider)
    people = [Participant(hooked, batch.hit_type_id, hexid(f"PAGE{i}"), client_class) for i in range(4)]
    hooked.hook_faults = ["drop"] * 4
    for person in people:
        hooked.set_status(person.session, "RETURNED")
    hooked.wait_for_deliveries()
    failed = [e for e in _log(hooked) if e["status"] == "FAILED"]
    assert len(failed) == 8 and hooked.page_size == 2
    found = recover_missed_events()
    assert found.recovered == 8
    assert all(p.assignment.status == Assignment.Status.ABANDONED for p in people)


def test_a_delivery_that_fails_is_retried_with_its_event_id_and_recorded_once(
    hooked, provider, batch, client_class, live_server
):
    """The site answers 503 once (its database busy); Prolific retries with the same X-Event-ID: one event."""
    with quietly(hooked):
        _publish(batch, provider)
    hooked.hook_attempts = 3
    leaving = Participant(hooked, batch.hit_type_id, hexid("RETRY1"), client_class)
    from unittest import mock

    from platforms.prolific.webhooks import views

    real = views.receive
    calls = []

    def busy_once(headers, body):
        calls.append(1)
        if len(calls) == 1:
            from platforms.prolific.signatures import DeliveryRefused

            raise DeliveryRefused(503, "busy", "try again")
        return real(headers, body)

    with mock.patch.object(views, "receive", busy_once):
        hooked.set_status(leaving.session, "RETURNED")
        hooked.wait_for_deliveries()
    submission = [d for d in hooked.deliveries if d["payload"]["event_type"] == "submission.status.change"]
    assert [d["code"] for d in submission][-2:] == [503, 202]
    assert len({d["event_id"] for d in submission[-2:]}) == 1
    assert ProlificEvent.objects.filter(event_id=submission[-1]["event_id"]).count() == 1
    assert {e["status"] for e in _log(hooked)} == {"SUCCEEDED"}
    assert recover_missed_events().recovered == 0
    assert poll_prolific().recovery.recovered == 0

# ruff: noqa: F811  (the fixtures of test_prolific, imported by name)
"""Prolific webhooks over real HTTP: the Prolific-compatible server subscribes, signs and delivers
events to the site running as a live server; participants arrive on the site's real pages.

What is shown: publishing subscribes the workspace once (retries, lost answers and restarts
never leave a second subscription) and the last batch's end unsubscribes it; a returned
place is freed for the next participant within seconds of the event, where polling alone
frees it only at its interval; forged, stale, replayed, duplicated and re-ordered deliveries
change nothing; a dropped one is caught by the poll; the endpoint answers JSON 4xx, never 500.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
import urllib.error
import urllib.request
from contextlib import contextmanager

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.crowd.clients.prolific_api import Prolific
from annotation.crowd.services.batches import cancel_batch
from annotation.models import Assignment, ProlificEvent, ProlificHookSecret, ProlificSubscription
from annotation.prolific.webhooks.services.deliveries import RESYNC_KIND, poll_prolific
from annotation.prolific.webhooks.services.subscriptions import reconcile_webhooks, webhooks_active
from benchmarks.fakes.prolific import TOKEN, hexid
from core.models import Job
from tests.annotation.prolific.test_prolific import (  # noqa: F401
    Participant,
    _publish,
    batch,
    client_class,
    make_prolific_batch,
    provider,
    server,
    sleeps,
)

WORKSPACE = "workspace-1"
EVENTS = ["study.status.change", "submission.status.change"]
#: A returned place freed "within seconds": the bound asserted on a busy 2-core test machine.
WITHIN_SECONDS = 5.0


@pytest.fixture
def hooked(server, settings, live_server):
    """The test server, with this site's public address the live server's (where events are delivered)."""
    settings.SITE_URL = live_server.url
    return server


@contextmanager
def quietly(fake):
    """The test's own work on the site (publishing, cancelling, polling) is done before any event it
    causes is delivered: the live server and the test then never write to the (shared, in-memory
    SQLite) test database at the same time."""
    with fake.deliveries_held():
        yield
    fake.wait_for_deliveries()


def endpoint(live_server) -> str:
    return live_server.url + reverse("annotation:prolific-webhook")


def post(url: str, body: bytes, headers: dict, method: str = "POST") -> tuple[int, str, dict]:
    """(status, content type, JSON answer) of one request to the site."""
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.headers["Content-Type"], json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], json.loads(exc.read())


def signed(secret: str, payload: dict, *, event_id: str, timestamp: int | None = None) -> tuple[bytes, dict]:
    """A delivery signed as Prolific's reference shows (base64 HMAC-SHA256 over timestamp + body)."""
    body = json.dumps(payload).encode()
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    signature = base64.b64encode(hmac.new(secret.encode(), stamp.encode() + body, hashlib.sha256).digest()).decode()
    return body, {
        "Content-Type": "application/json",
        "X-Prolific-Request-Signature": signature,
        "X-Prolific-Request-Timestamp": stamp,
        "X-Event-ID": event_id,
    }


def resyncs() -> int:
    return Job.objects.filter(kind=RESYNC_KIND).count()


def test_publishing_subscribes_the_workspace_once_and_the_last_batch_ending_unsubscribes_it(
    hooked, provider, batch, query_set, live_server
):
    with quietly(hooked):
        _publish(batch, provider)
    enabled = sorted((s["event_type"], s["target_url"], s["workspace_id"]) for s in hooked.enabled_subscriptions())
    assert enabled == [(event, endpoint(live_server), WORKSPACE) for event in EVENTS]
    assert list(hooked.hook_secrets) == [WORKSPACE]
    assert ProlificHookSecret.objects.get(workspace_id=WORKSPACE).value == hooked.hook_secrets[WORKSPACE]["value"]
    assert webhooks_active()

    # Publishing again, a second batch, a poll, a restarted worker (a new client): nothing new is made.
    second = make_prolific_batch(query_set, name="pro2")
    with quietly(hooked):
        _publish(batch, provider)
        _publish(second, provider)
        poll_prolific()
        reconcile_webhooks(Prolific(hooked.base + "/api/v1/", TOKEN))
    assert hooked.calls.count("create_hook_subscription") == 2
    assert hooked.calls.count("create_hook_secret") == 1
    assert len(hooked.hook_subscriptions) == 2

    # One batch ends: the other still needs them. The last one ends: they go, the secret stays.
    with quietly(hooked):  # the study's STOP is delivered too (and re-reads the batch)
        cancel_batch(batch, provider)
    reconcile_webhooks()
    assert len(hooked.enabled_subscriptions()) == 2
    with quietly(hooked):
        cancel_batch(second, provider)
    # No reconciliation called here: the study's STOP, delivered, re-read the batch, which unsubscribed.
    about_second = [d for d in hooked.deliveries if d["payload"]["resource_id"] == second.hit_type_id]
    assert [(d["payload"]["status"], d["code"]) for d in about_second] == [("ACTIVE", 202), ("COMPLETED", 202)]
    assert hooked.hook_subscriptions == {}
    assert not ProlificSubscription.objects.exists() and not webhooks_active()
    assert ProlificHookSecret.objects.count() == 1 and len(hooked.hook_secrets) == 1


def test_lost_answers_and_restarts_never_leave_a_second_subscription(hooked, provider, batch, settings):
    hooked.faults["create_hook_secret"] = ["lose_response"]
    hooked.faults["create_hook_subscription"] = ["throttle", "lose_response"]
    _publish(batch, provider)  # the study is published; its webhooks are half set up, polling covers it

    # The secret's lost answer was looked up on Prolific, never made twice (a second would replace it).
    assert hooked.calls.count("create_hook_secret") == 1
    assert ProlificHookSecret.objects.get().value == hooked.hook_secrets[WORKSPACE]["value"]
    # The subscription's lost answer: it exists on Prolific, unconfirmed, so it delivers nothing.
    assert [s["is_enabled"] for s in hooked.hook_subscriptions.values()] == [False]
    row = ProlificSubscription.objects.get(event_type="submission.status.change")
    assert row.create_attempted is not None and row.remote_id == "" and not row.confirmed
    assert not webhooks_active()

    # A worker restarts and reconciles (with a fresh client); its confirmation loses its answer too.
    hooked.faults["confirm_hook_subscription"] = ["lose_response"]
    state = reconcile_webhooks(Prolific(settings.PROLIFIC_API_URL, TOKEN, sleep=lambda seconds: None))
    assert (state.deleted, state.created, state.error) == (1, 2, "")  # the unconfirmed leftover went
    assert sorted(s["event_type"] for s in hooked.hook_subscriptions.values() if s["is_enabled"]) == EVENTS
    assert len(hooked.hook_subscriptions) == 2 and webhooks_active()

    creates = hooked.calls.count("create_hook_subscription")
    with quietly(hooked):
        for _ in range(3):
            reconcile_webhooks(Prolific(settings.PROLIFIC_API_URL, TOKEN))
            _publish(batch, provider)
    assert hooked.calls.count("create_hook_subscription") == creates
    assert len(hooked.hook_subscriptions) == 2 and hooked.calls.count("create_hook_secret") == 1

    # Prolific disabled one after failed deliveries: the next poll makes it deliver again, still one.
    disabled = next(iter(hooked.hook_subscriptions.values()))
    disabled["is_enabled"] = False
    with quietly(hooked):
        poll_prolific()
    assert len(hooked.enabled_subscriptions()) == 2 and len(hooked.hook_subscriptions) == 2


def _fill(fake, batch, client_class, prefix: str) -> list[Participant]:
    """Four participants take the batch's four places (two HIT groups of two) on the site."""
    people = [Participant(fake, batch.hit_type_id, hexid(f"{prefix}{i}"), client_class) for i in range(4)]
    assert all(p.arrival.status_code == 302 for p in people)
    return people


def test_a_returned_place_is_freed_for_the_next_participant_within_seconds_where_polling_waits_its_interval(
    hooked, provider, query_set, client_class, settings, capsys
):
    # -- polling only ----------------------------------------------------------------------
    settings.PROLIFIC_WEBHOOKS = False
    polled = make_prolific_batch(query_set, name="polled")
    _publish(polled, provider)
    assert hooked.hook_subscriptions == {}
    poll_prolific()  # the timer's first poll re-reads the new batch
    leaving, *_ = _fill(hooked, polled, client_class, "POLL")
    hooked.set_status(leaving.session, "RETURNED")
    time.sleep(1)
    newcomer = Participant(hooked, polled.hit_type_id, hexid("POLLNEW"), client_class)
    assert newcomer.arrival.status_code == 200  # "every group is taken: please return the study"
    assert not Assignment.objects.filter(provider_assignment_id=newcomer.session).exists()
    interval = settings.PROLIFIC_POLL_SECONDS
    assert poll_prolific(now=timezone.now() + timezone.timedelta(seconds=interval - 60)).started == []
    assert leaving.assignment.status == Assignment.Status.ASSIGNED  # still held, a minute before the poll
    assert poll_prolific(now=timezone.now() + timezone.timedelta(seconds=interval + 1)).started == ["polled"]
    assert leaving.assignment.status == Assignment.Status.ABANDONED  # freed at the polling interval

    # -- with webhooks -----------------------------------------------------------------------
    settings.PROLIFIC_WEBHOOKS = True
    hooked_batch = make_prolific_batch(query_set, name="hooked")
    with quietly(hooked):
        _publish(hooked_batch, provider)
    assert webhooks_active()
    leaving, *_ = _fill(hooked, hooked_batch, client_class, "HOOK")
    started = time.monotonic()
    hooked.set_status(leaving.session, "RETURNED")
    hooked.wait_for_deliveries()
    delivered = [d for d in hooked.deliveries if d["payload"]["resource_id"] == leaving.session]
    assert [d["code"] for d in delivered] == [202]
    freed_after = delivered[0]["answered"] - started
    assert leaving.assignment.status == Assignment.Status.ABANDONED
    newcomer = Participant(hooked, hooked_batch.hit_type_id, hexid("HOOKNEW"), client_class)
    assert newcomer.arrival.status_code == 302 and newcomer.assignment.hit == leaving.assignment.hit
    with capsys.disabled():
        print(f"\n[webhooks] returned place freed {freed_after:.2f} s after the return; polling: {interval} s")
    assert freed_after < WITHIN_SECONDS
    assert freed_after * 50 < interval  # well before the polling interval
    # With webhooks confirmed, polling slows down (and still catches what never arrives, below).
    with quietly(hooked):
        assert poll_prolific().interval == settings.PROLIFIC_POLL_WITH_WEBHOOKS_SECONDS


def test_forged_stale_duplicated_replayed_reordered_and_dropped_deliveries(
    hooked, provider, batch, client_class, live_server, settings
):
    with quietly(hooked):
        _publish(batch, provider)
    p1, p2, p3, p4 = _fill(hooked, batch, client_class, "P")

    # Forged (signed with another secret) and stale (signed ten minutes ago): refused, nothing recorded.
    for fault, code, error in (("forge", 403, "bad_signature"), ("stale", 400, "stale")):
        hooked.hook_faults = [fault]
        hooked.set_status(p1.session, "RETURNED")
        hooked.wait_for_deliveries()
        assert (hooked.deliveries[-1]["code"], json.loads(hooked.deliveries[-1]["answer"])["error"]) == (code, error)
    assert ProlificEvent.objects.count() == 0 and resyncs() == 0
    assert p1.assignment.status == Assignment.Status.ASSIGNED  # nothing acted on

    # Duplicated (the same request twice): one event, one re-read; the place freed once.
    hooked.hook_faults = ["duplicate"]
    hooked.set_status(p1.session, "RETURNED")
    hooked.wait_for_deliveries()
    twice = hooked.deliveries[-2:]
    assert twice[0]["event_id"] == twice[1]["event_id"] and [d["code"] for d in twice] == [202, 200]
    assert json.loads(twice[1]["answer"])["outcome"] == "duplicate"
    assert ProlificEvent.objects.count() == 1 and resyncs() == 1
    assert p1.assignment.status == Assignment.Status.ABANDONED

    # Replayed: the same signed request under another event id is refused.
    secret = ProlificHookSecret.objects.get().value
    payload = {"resource_id": p1.session, "event_type": "submission.status.change", "status": "ACTIVE"}
    body, headers = signed(secret, payload, event_id="older-event")
    # A genuine but older event ("ACTIVE", after the place was freed) is only a re-read of the present.
    assert post(endpoint(live_server), body, headers)[0] == 202
    assert p1.assignment.status == Assignment.Status.ABANDONED
    status, kind, answer = post(endpoint(live_server), body, {**headers, "X-Event-ID": "replayed-event"})
    assert (status, kind, answer["error"]) == (409, "application/json", "replayed")
    assert ProlificEvent.objects.count() == 2

    # Re-ordered: P2's completion is held back and arrives after P3's return, and after the approval
    # the re-read made meanwhile. P2 is approved once; P3's place is freed.
    with quietly(hooked):
        p2.answer()
    hooked.hook_faults = ["hold"]
    hooked.set_status(p2.session, "AWAITING REVIEW")
    hooked.set_status(p3.session, "RETURNED")
    hooked.wait_for_deliveries()
    order = [(d["payload"]["resource_id"], d["payload"]["status"]) for d in hooked.deliveries[-3:]]
    assert order == [(p3.session, "RETURNED"), (p2.session, "AWAITING REVIEW"), (p2.session, "APPROVED")]
    assert hooked.calls.count("transition_submission") == 1
    assert p2.assignment.status == Assignment.Status.APPROVED
    assert p3.assignment.status == Assignment.Status.ABANDONED

    # Delayed: arrives late (signed when sent), and is acted on then.
    hooked.hook_faults = ["delay:0.5"]
    returned = time.monotonic()
    hooked.set_status(p4.session, "RETURNED")
    hooked.wait_for_deliveries()
    assert hooked.deliveries[-1]["code"] == 202 and hooked.deliveries[-1]["answered"] - returned >= 0.5
    assert p4.assignment.status == Assignment.Status.ABANDONED

    # Dropped: never arrives; the poll catches it at its (longer, webhooks being active) interval.
    p5 = Participant(hooked, batch.hit_type_id, hexid("P5"), client_class)
    assert p5.arrival.status_code == 302 and p5.assignment.status == Assignment.Status.ASSIGNED  # a freed place
    hooked.hook_faults = ["drop"]
    hooked.set_status(p5.session, "RETURNED")
    hooked.wait_for_deliveries()
    assert p5.assignment.status == Assignment.Status.ASSIGNED
    later = timezone.now() + timezone.timedelta(seconds=settings.PROLIFIC_POLL_WITH_WEBHOOKS_SECONDS + 1)
    with quietly(hooked):
        assert poll_prolific().started == []  # re-read by the events a moment ago
        assert poll_prolific(now=later).started == [batch.name]
    assert p5.assignment.status == Assignment.Status.ABANDONED


def test_the_endpoint_answers_json_4xx_to_anything_it_refuses(hooked, provider, batch, live_server, settings):
    url = endpoint(live_server)
    payload = {"resource_id": hexid("nobody"), "event_type": "submission.status.change", "status": "RETURNED"}
    # Before any secret exists nothing can be verified.
    body, headers = signed("no-secret-yet", payload, event_id="e0")
    assert post(url, body, headers)[:2] == (403, "application/json")

    with quietly(hooked):
        _publish(batch, provider)
    secret = ProlificHookSecret.objects.get().value
    cases = {
        "GET": (405, "method_not_allowed"),
        "no headers": (400, "missing_header"),
        "stale": (400, "stale"),
        "forged": (403, "bad_signature"),
        "not json": (400, "malformed_body"),
        "too large": (413, "too_large"),
    }
    for case, expected in cases.items():
        body, headers = signed(secret, payload, event_id=f"e-{case.replace(' ', '-')}")
        method = "POST"
        if case == "GET":
            method, body = "GET", None
        elif case == "no headers":
            headers = {"Content-Type": "application/json"}
        elif case == "stale":
            body, headers = signed(secret, payload, event_id="e-stale", timestamp=int(time.time()) - 301)
        elif case == "forged":
            body, headers = signed(secret + "x", payload, event_id="e-forged")
        elif case == "not json":
            body, headers = b"{not json", signed(secret, payload, event_id="e-nj")[1]
            stamp = headers["X-Prolific-Request-Timestamp"]
            mac = hmac.new(secret.encode(), stamp.encode() + body, hashlib.sha256).digest()
            headers["X-Prolific-Request-Signature"] = base64.b64encode(mac).decode()
        elif case == "too large":
            body = b" " * (70 * 1024)
        status, kind, answer = post(url, body, headers, method=method)
        assert (status, kind, answer["error"]) == (*expected[:1], "application/json", expected[1]), case
    assert ProlificEvent.objects.count() == 0 and resyncs() == 0

    # A genuine event about a session this site never saw: recorded, nothing to re-read.
    body, headers = signed(secret, payload, event_id="e-unknown")
    status, _, answer = post(url, body, headers)
    assert (status, answer["outcome"], answer["batch"], answer["job"]) == (200, "ignored", None, None)
    assert resyncs() == 0


def test_the_poll_command_reports_the_webhooks_and_the_batches_it_re_reads(hooked, provider, batch):
    from io import StringIO

    from django.core.management import call_command

    with quietly(hooked):
        _publish(batch, provider)
    out = StringIO()
    with quietly(hooked):
        call_command("poll_prolific", stdout=out)
    assert out.getvalue().strip() == f"Webhooks active; polling every 3600 s; re-read now: {batch.name}"
    out = StringIO()
    with quietly(hooked):
        call_command("poll_prolific", stdout=out)  # re-read a moment ago: not again
    assert out.getvalue().strip() == "Webhooks active; polling every 3600 s; re-read now: none"


def test_no_subscription_is_asked_for_an_address_prolific_cannot_deliver_to(db, settings):
    settings.PROLIFIC_API_URL = "https://api.prolific.com/api/v1/"
    settings.PROLIFIC_API_TOKEN, settings.PROLIFIC_WORKSPACE_ID = "token", WORKSPACE
    settings.SITE_URL = "http://localhost:8000"
    state = reconcile_webhooks()
    assert "https" in state.error and not ProlificSubscription.objects.exists()


def test_confirmed_subscriptions_without_verified_events_keep_the_short_polling_interval(
    hooked, provider, batch, live_server, settings, caplog
):
    """Confirmed subscriptions say only that Prolific should deliver: a broken path (a wrong SITE_URL
    or proxy, the secret replaced elsewhere: every delivery refused 403) must not slow polling down."""
    from core.services.ratelimit import shared_cache

    with quietly(hooked):
        _publish(batch, provider)
    window = settings.PROLIFIC_POLL_WITH_WEBHOOKS_SECONDS
    assert ProlificSubscription.objects.filter(confirmed=True).count() == 2
    assert webhooks_active()  # just confirmed: events may not have come yet
    later = timezone.now() + timezone.timedelta(seconds=window + 1)
    with quietly(hooked):
        # Past the window with no verified event since: the short interval.
        assert not webhooks_active(later)
        assert poll_prolific(now=later).interval == settings.PROLIFIC_POLL_SECONDS
    # A verified delivery (re-dated as if it had come within the window then): the long interval again.
    payload = {"resource_id": hexid("nobody"), "event_type": "submission.status.change", "status": "RETURNED"}
    body, headers = signed(ProlificHookSecret.objects.get().value, payload, event_id="e-verified")
    assert post(endpoint(live_server), body, headers)[0] == 200
    ProlificEvent.objects.update(received=later - timezone.timedelta(seconds=60))
    with quietly(hooked):
        assert webhooks_active(later) and poll_prolific(now=later).interval == window

    # The secret replaced elsewhere: every delivery is refused 403, and repeated refusals are logged.
    shared_cache().clear()
    payload = {"resource_id": batch.hit_type_id, "event_type": "study.status.change", "status": "ACTIVE"}
    for i in range(3):
        body, headers = signed("a-secret-made-elsewhere", payload, event_id=f"e-elsewhere-{i}")
        assert post(endpoint(live_server), body, headers)[0] == 403
    assert "3 Prolific webhook deliveries refused for a bad signature" in caplog.text

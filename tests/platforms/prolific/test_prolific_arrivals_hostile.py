# ruff: noqa: F811  (the fixtures of test_prolific, imported by name)
"""Prolific arrivals under hostile conditions, over real HTTP against the Prolific-compatible server.

Anyone with a study link can send arrivals with made-up sessions. While Prolific throttles
(429, with and without ``Retry-After``), answers slowly, trickles its answer byte by byte
or answers an HTML page, an arrival's check runs on its own threads and never holds the
request past the arrival timeout: the participant gets the page that waits and takes them
in by itself, the check honours each 429's ``Retry-After``, a failure delays only its own
link (issue 41: no pause for everyone), what Prolific refused is remembered, and new checks
stay within the per-client and per-study rates and the pace of all calls. The flood test
runs the site as deployed (gunicorn, gthread, few threads) and shows a login from another
client answered while the flood is in flight. No assertion reads a clock (issue 55): an arrival that
waited for its check is seen by its answer (the check's failure, not "check under way").
"""

from __future__ import annotations

import http.client
import os
import re
import sqlite3
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.contrib.sessions.models import Session
from django.db import connection
from django.urls import reverse

from annotation.models import Assignment, Worker
from core.services.ratelimit import shared_cache
from platforms.prolific.models import ProlificSession
from tests.platforms.prolific.fake_server import TOKEN, hexid
from tests.platforms.prolific.test_prolific import (  # noqa: F401
    Participant,
    _publish,
    batch,
    client_class,
    provider,
    server,
    sleeps,
)

TIMEOUT = 0.5  # PROLIFIC_ARRIVAL_TIMEOUT_SECONDS in these tests
DEADLINE = 2.0  # PROLIFIC_ARRIVAL_DEADLINE_SECONDS
#: Storms whose check ends at its first call (a Retry-After past the deadline; an answer of the wrong
#: shape, which no retry mends): the request's short wait sees the check's failure. Every other storm's
#: check asks again or waits until its deadline, long after the request's wait.
ENDS_AT_ONCE = ("throttle:30", "garbled")
WAITING = (202, 503)  # the page that waits: a check under way, or none begun yet
REFRESH = re.compile(rb'<meta http-equiv="refresh" content="(\d+)">')


@pytest.fixture(autouse=True)
def arrival_settings(settings, db):
    settings.PROLIFIC_ARRIVAL_TIMEOUT_SECONDS = TIMEOUT
    settings.PROLIFIC_ARRIVAL_DEADLINE_SECONDS = DEADLINE
    settings.PROLIFIC_ARRIVAL_REFRESH_SECONDS = 1
    settings.PROLIFIC_ARRIVAL_REFUSED_SECONDS = 300
    settings.PROLIFIC_ARRIVALS_PER_CLIENT_PER_MINUTE = 30
    settings.PROLIFIC_ARRIVAL_CHECKS_PER_STUDY_PER_MINUTE = 600
    shared_cache().clear()
    return settings


@pytest.fixture
def on_threads(settings, request, monkeypatch):
    """Checks on their own threads, as deployed (the suite runs them inline). Their cache is this
    process's memory, one per test: the in-memory test database is not for other threads' writes."""
    from core.services.ratelimit import SHARED
    from platforms.prolific.arrivals.services import checks as prolific

    monkeypatch.setattr(prolific, "_slow_until", 0.0)  # no earlier test's slow Prolific
    settings.JOB_LOCAL_RUNNER = "threads"
    memory = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": request.node.nodeid}
    settings.CACHES = {**settings.CACHES, SHARED: memory}
    yield
    shared_cache().clear()


def _arrive(client, batch, pid, session, **extra):
    path = reverse("annotation:prolific-start", args=[batch.name])
    started = time.monotonic()
    answer = client.get(path, {"PROLIFIC_PID": pid, "STUDY_ID": batch.hit_type_id, "SESSION_ID": session}, **extra)
    return answer, time.monotonic() - started


def _asks(fake) -> int:
    return fake.calls.count("get_submission")


def _waits(answer) -> int:
    """The page that waits: it refreshes itself after as many seconds as its Retry-After says."""
    assert answer.status_code in WAITING, answer.status_code
    found = REFRESH.search(answer.content)
    assert found is not None, answer.content[:500]
    assert int(found.group(1)) == int(answer["Retry-After"]) >= 1
    assert b"by itself" in answer.content and b"keep it open" in answer.content
    return int(found.group(1))


def _waits_429(answer) -> int:
    assert answer.status_code == 429
    found = REFRESH.search(answer.content)
    assert found is not None and int(found.group(1)) == int(answer["Retry-After"])
    return int(found.group(1))


def _follow(client, batch, pid, session, *, within: float):
    """As the waiting page does: come back after its refresh time, until another answer (``within`` s at most)."""
    ends = time.monotonic() + within
    while True:
        answer, _ = _arrive(client, batch, pid, session)
        if answer.status_code not in WAITING or time.monotonic() > ends:
            return answer
        time.sleep(_waits(answer))


# -- (a) the request is never held, and a failure pauses nobody ---------------------------------
@pytest.mark.parametrize("storm", ["throttle:30", "throttle_bare", "slow:5", "drip:0.2", "error", "html", "garbled"])
def test_an_arrival_while_prolific_misbehaves_answers_at_once_and_pauses_nobody(
    server, provider, batch, client_class, on_threads, settings, storm
):
    """429 with Retry-After 30 or none, a 5 s wait, an answer trickled a byte every 0.2 s (each
    read on time, the whole very late), a 502, an HTML page, JSON of the wrong shape: the
    participant gets the page that waits within about the arrival timeout; the same link again
    asks Prolific nothing more while its check is under way or after it failed; another link is
    asked at once (issue 41: before, one failure paused every arrival for 15 s). A Retry-After
    longer than the deadline is what the page waits for. Nothing is kept for a waiting arrival.
    (The first arrival's session is one Prolific knows, so that a slow or dripping Prolific is
    slow with its 200 answer.)"""
    from platforms.prolific.arrivals.services.checks import Link

    settings.PROLIFIC_ARRIVAL_REFRESH_SECONDS = 3  # the failed link's wait: time to come back inside it
    _publish(batch, provider)
    session, _ = server.start(batch.hit_type_id, hexid("PID1"))
    server.standing["get_submission"] = storm
    first, _ = _arrive(client_class(), batch, hexid("PID1"), session)
    _waits(first)
    checking = Link(batch.hit_type_id, hexid("PID1"), session).key("checking")
    if storm in ENDS_AT_ONCE:  # the check's one call failed at once: its outcome is the answer
        assert first.status_code == 503 and _asks(server) == 1, f"{storm}: {first.status_code}"
    else:  # answered while the check still runs (it lasts until its deadline): the request never waited for it
        assert first.status_code == 202 and shared_cache().get(checking) is not None, f"{storm}: {first.status_code}"
    if storm == "throttle:30":  # Prolific's Retry-After is past the deadline: the check ends and it is honoured
        assert first.status_code == 503 and first["Retry-After"] == "30" and _asks(server) == 1
    ends = time.monotonic() + DEADLINE + 1
    while shared_cache().get(checking) is not None and time.monotonic() < ends:
        time.sleep(0.05)
    assert shared_cache().get(checking) is None, f"{storm}: the check outlived its deadline"
    asked = _asks(server)
    again, _ = _arrive(client_class(), batch, hexid("PID1"), session)
    assert again.status_code == 503 and _waits(again) >= 1
    assert _asks(server) == asked  # the link's failure is remembered: not asked again, nothing to wait for
    other, _ = _arrive(client_class(), batch, hexid("SYBIL2"), hexid("made-up-2"))
    _waits(other)
    ends = time.monotonic() + DEADLINE + 1
    while _asks(server) == asked and time.monotonic() < ends:  # its check may wait for a thread
        time.sleep(0.05)
    assert _asks(server) > asked, f"{storm}: another link was not asked: a pause for everyone"
    assert not ProlificSession.objects.exists() and not Worker.objects.exists()
    assert not Session.objects.exists()  # nor a browser session row per waiting arrival


def test_a_throttled_check_honours_retry_after_and_the_page_takes_the_participant_in(
    server, provider, batch, client_class, on_threads
):
    """A 429 with Retry-After 1 (inside the deadline): the check asks again one second later, not
    before; the request has long answered the page that waits, whose own next visit finds the
    check's outcome and takes the participant in, without asking Prolific again."""
    _publish(batch, provider)
    session, _ = server.start(batch.hit_type_id, hexid("PID1"))
    server.faults["get_submission"] = ["throttle:1"]
    browser = client_class()
    first, _ = _arrive(browser, batch, hexid("PID1"), session)
    assert first.status_code == 202  # answered while the check still waits out Prolific's Retry-After
    assert b"Confirming your place with Prolific" in first.content
    in_ = _follow(browser, batch, hexid("PID1"), session, within=DEADLINE + 2)
    assert in_.status_code == 302 and "/prolific/hits/" in in_["Location"]
    times = [at for name, at in server.call_times if name == "get_submission"]
    assert len(times) == 2 and times[1] - times[0] >= 1.0  # Retry-After honoured: not a moment before
    assert Assignment.objects.count() == 1


def test_a_non_json_answer_is_asked_again_never_a_server_error(server, provider, batch, client_class):
    """Finding 17: Prolific (or a proxy before it) answers 200 with an HTML page: asked again
    within the deadline, the participant gets in on their first page."""
    _publish(batch, provider)
    session, _ = server.start(batch.hit_type_id, hexid("PID1"))
    server.faults["get_submission"] = ["html"]
    answer, _ = _arrive(client_class(), batch, hexid("PID1"), session)
    assert answer.status_code == 302 and _asks(server) == 2


def test_a_busy_database_under_a_flood_is_the_waiting_page_not_a_server_error(
    server, provider, batch, client_class, monkeypatch
):
    """The shared cache lives in the database by default; on SQLite many writers at once can
    find it busy past its timeout (a flood under a loaded CI once answered one arrival 500)."""
    from django.db import OperationalError

    _publish(batch, provider)
    session, _ = server.start(batch.hit_type_id, hexid("PID1"))

    def busy(*args, **kwargs):
        raise OperationalError("database is locked")

    for method in ("get_many", "add"):  # the link's memories, then the per-client count
        with monkeypatch.context() as patched:
            patched.setattr(type(shared_cache()), method, busy)
            answer, _ = _arrive(client_class(raise_request_exception=False), batch, hexid("PID1"), session)
        assert _waits(answer) == 5 and answer.status_code == 503, method
    assert not Assignment.objects.exists()


def test_refused_links_are_remembered_and_never_poison_the_real_owner(server, provider, batch, client_class):
    """Prolific answers promptly: a made-up session is asked about once, then refused from memory;
    a stranger using a real session under another id is refused without refusing its owner."""
    _publish(batch, provider)
    for _ in range(3):
        answer, _ = _arrive(client_class(), batch, hexid("SYBIL1"), hexid("made-up-1"))
        assert answer.status_code == 403 and b"Prolific does not know this session" in answer.content
    assert _asks(server) == 1
    session, _ = server.start(batch.hit_type_id, hexid("PID1"))
    for _ in range(2):
        stranger, _ = _arrive(client_class(), batch, hexid("PID2"), session)
        assert stranger.status_code == 403 and b"another participant" in stranger.content
    assert _asks(server) == 2
    owner, _ = _arrive(client_class(), batch, hexid("PID1"), session)
    assert owner.status_code == 302 and _asks(server) == 3
    returned, _ = server.start(batch.hit_type_id, hexid("PID3"))
    server.set_status(returned, "RETURNED")
    for _ in range(2):
        answer, _ = _arrive(client_class(), batch, hexid("PID3"), returned)
        assert answer.status_code == 403 and b"returned" in answer.content
    assert _asks(server) == 4


# -- one link cannot delay anyone else (issue 27, review finding 1; issue 41) -------------------
@pytest.mark.parametrize(
    "pid,study,session",
    [
        ("SYBIL1", None, "made-up-1"),  # the old pattern's ids: any [A-Za-z0-9_-]{1,64}
        (hexid("SYBIL1").upper(), None, hexid("made-up-1")),  # Prolific's ids are lowercase
        (hexid("SYBIL1"), None, hexid("made-up-1")[:23]),  # 23 characters
        (hexid("SYBIL1"), None, hexid("made-up-1") + "0"),  # 25
        (hexid("SYBIL1"), None, hexid("made-up-1") + "\n"),  # "$" would let a final newline through
        (hexid("SYBIL1"), None, "../" + hexid("made-up-1")[3:]),
        (hexid("SYBIL1"), "study", hexid("made-up-1")),
        (hexid("SYBIL1"), None, hexid("made-up-1")[:23] + "\u0661"),  # a non-ASCII digit
    ],
)
def test_a_malformed_link_is_refused_at_once_without_asking_prolific(
    server, provider, batch, client_class, pid, study, session
):
    """Prolific's ids are 24 lowercase hex characters: a link with anything else is refused
    (400) before Prolific is asked, even while Prolific fails."""
    _publish(batch, provider)
    server.standing["get_submission"] = "error"
    path = reverse("annotation:prolific-start", args=[batch.name])
    query = {"PROLIFIC_PID": pid, "STUDY_ID": study or batch.hit_type_id, "SESSION_ID": session}
    answer = client_class().get(path, query)
    assert answer.status_code == 400 and b"malformed" in answer.content
    assert _asks(server) == 0


@pytest.mark.parametrize("refusal", ["status:403", "status:400", "status:405", "status:410"])
def test_an_answer_about_the_link_is_that_links_refusal_never_a_pause(server, provider, batch, client_class, refusal):
    """Prolific answers 403 (or another 4xx but 401 and 429) about one attacker-chosen session:
    that link is refused, remembered (asked once), and a genuine participant right after gets in."""
    _publish(batch, provider)
    server.faults["get_submission"] = [refusal]
    for _ in range(3):
        answer, _ = _arrive(client_class(), batch, hexid("SYBIL1"), hexid("made-up-1"))
        assert answer.status_code == 403 and b"Prolific does not know this session" in answer.content
    assert _asks(server) == 1
    real = Participant(server, batch.hit_type_id, hexid("PID1"), client_class)
    assert real.arrival.status_code == 302 and _asks(server) == 2


@pytest.mark.parametrize("failure", ["status:401", "throttle:30"])
def test_our_token_refused_or_throttled_delays_only_the_link_that_met_it(
    server, provider, batch, client_class, failure
):
    """401 (this site's token) and a 429 whose Retry-After is past the deadline end that link's
    check: its participant waits (the 429's 30 s, honoured), while the next participant is asked
    at once and gets in (before: both paused everyone for 15 s)."""
    _publish(batch, provider)
    session, _ = server.start(batch.hit_type_id, hexid("PID1"))
    browser = client_class()
    server.faults["get_submission"] = [failure]
    first, _ = _arrive(browser, batch, hexid("PID1"), session)
    assert first.status_code == 503 and _waits(first) == (30 if failure.startswith("throttle") else 1)
    assert _arrive(browser, batch, hexid("PID1"), session)[0].status_code == 503 and _asks(server) == 1
    real = Participant(server, batch.hit_type_id, hexid("PID2"), client_class)
    assert real.arrival.status_code == 302 and _asks(server) == 2


def _wait_over(batch, pid: str, session: str) -> None:
    """As if a failed link's wait had passed: its failures are still counted, its time is over."""
    from platforms.prolific.arrivals.services.checks import Link

    key = Link(batch.hit_type_id, pid, session).key("failed")
    shared_cache().set(key, {**shared_cache().get(key), "until": time.time() - 1}, 600)


@pytest.mark.parametrize("failure", ["error", "status:500", "status:302", "garbled", "html", "lose_response"])
def test_a_link_whose_checks_keep_failing_waits_longer_each_time_and_delays_nobody(
    server, provider, batch, client_class, settings, failure
):
    """A 5xx, a redirect, a garbled, non-JSON or lost answer, again and again for one link (as a
    crafted link might provoke): each failed check doubles that link's wait (1, 2, 4 s with a
    1 s refresh), so it cannot cost Prolific a check every refresh; a genuine participant right
    after is asked and gets in at once."""
    settings.PROLIFIC_ARRIVAL_DEADLINE_SECONDS = 0.5
    _publish(batch, provider)
    crafted = (hexid("SYBIL1"), hexid("crafted-1"))
    waits = []
    for _ in range(3):
        server.standing["get_submission"] = failure
        answer, _ = _arrive(client_class(), batch, *crafted)
        waits.append(_waits(answer))
        asked = _asks(server)
        assert _arrive(client_class(), batch, *crafted)[0].status_code == 503 and _asks(server) == asked
        _wait_over(batch, *crafted)
    assert waits == [1, 2, 4]
    del server.standing["get_submission"]
    real = Participant(server, batch.hit_type_id, hexid("PID1"), client_class)
    assert real.arrival.status_code == 302 and _asks(server) == asked + 1


def test_twelve_checks_at_once_start_their_calls_at_the_shared_pace(server, provider, batch, on_threads, settings):
    """Twelve new links at once, each from its own thread: each is asked once, and the calls to
    Prolific start at most PROLIFIC_API_CALLS_PER_SECOND a second (here 5: the twelfth about
    2.2 s after the first), whichever thread makes them."""
    from platforms.prolific.arrivals.services import checks as prolific

    settings.PROLIFIC_API_CALLS_PER_SECOND = 5
    settings.PROLIFIC_ARRIVAL_DEADLINE_SECONDS = 5.0
    settings.PROLIFIC_ARRIVAL_TIMEOUT_SECONDS = 5.0
    _publish(batch, provider)
    started = len(server.call_times)

    def arrival(i: int) -> str:
        try:
            prolific.confirmed_status(prolific.Link(batch.hit_type_id, hexid(f"P{i}"), hexid(f"S{i}")), None)
        except prolific.ArrivalRefused:
            return "refused"
        except prolific.ArrivalDeferred:
            return "waiting"
        return "confirmed"

    with ThreadPoolExecutor(12) as pool:
        outcomes = list(pool.map(arrival, range(12)))
    assert outcomes.count("refused") + outcomes.count("waiting") == 12
    deadline = time.monotonic() + 120  # the calls' state, with a deadline far above any machine's pace
    while _asks(server) < 12 and time.monotonic() < deadline:
        time.sleep(0.05)
    times = sorted(at for name, at in server.call_times[started:] if name == "get_submission")
    assert len(times) == 12  # each link once
    # Each call waits for its slot of 0.2 s: twelve span 2.2 s, and no second holds more than its
    # five (one more at a second's edge, one more for a call sent late after its slot on a busy machine).
    assert times[-1] - times[0] >= 11 / 5 - 0.3, times
    assert max(sum(1 for t in times if start <= t < start + 1) for start in times) <= 5 + 2, times


def test_a_dripping_prolific_frees_the_check_thread_within_the_deadline(
    server, provider, batch, client_class, on_threads
):
    """The request answers the page that waits within the arrival timeout; the check's call to
    Prolific, which drips its answer (each read on time), is hung up on at the check's deadline,
    so the few threads that ask Prolific are free again (before the arrival deadline existed,
    each held the client's 120 s default, here the drip's ~30 s)."""
    _publish(batch, provider)
    session, _ = server.start(batch.hit_type_id, hexid("PID1"))
    server.standing["get_submission"] = "drip:0.2"
    answer, _ = _arrive(client_class(), batch, hexid("PID1"), session)
    assert answer.status_code == 202  # answered while the check still reads the drip
    # Hung up on before the drip's end (~30 s): the check's deadline, not the drip, ended the call.
    # (The wait is a bound on waiting for it, not an assertion on when it came.)
    ends = time.monotonic() + 20
    while not server.hung_up and time.monotonic() < ends:
        time.sleep(0.05)
    assert server.hung_up, "the check's call to Prolific still reads the drip"


# -- (c) rates: the friendly page, never a 500 ----------------------------------------------------
def test_each_client_has_a_few_arrivals_a_minute(server, provider, batch, client_class, settings):
    settings.PROLIFIC_ARRIVALS_PER_CLIENT_PER_MINUTE = 3
    _publish(batch, provider)
    answers = [_arrive(client_class(), batch, hexid(f"SYBIL{i}"), hexid(f"made-up-{i}"))[0] for i in range(5)]
    assert [a.status_code for a in answers] == [403, 403, 403, 429, 429]
    assert b"from your connection" in answers[3].content and 1 <= _waits_429(answers[3]) <= 60
    assert _asks(server) == 3  # the limited ones cost Prolific nothing
    # Another client address has its own budget.
    other, _ = _arrive(client_class(), batch, hexid("SYBIL9"), hexid("made-up-9"), REMOTE_ADDR="10.0.0.9")
    assert other.status_code == 403


def test_behind_the_proxy_clients_are_told_apart_by_the_forwarded_address(server, provider, batch, settings):
    """With DJANGO_BEHIND_TLS_PROXY every request comes from the proxy; core.web.client_ip takes the
    address the proxy appended, so one flooding client does not lock the others out, and a
    forged first entry does not escape the limit."""
    from django.test import Client

    settings.BEHIND_TLS_PROXY = True
    settings.PROLIFIC_ARRIVALS_PER_CLIENT_PER_MINUTE = 2
    _publish(batch, provider)
    flooder = [
        _arrive(Client(), batch, hexid("S"), hexid(f"m-{i}"), HTTP_X_FORWARDED_FOR=f"6.6.6.{i}, 203.0.113.7")[
            0
        ].status_code
        for i in range(4)
    ]
    assert flooder == [403, 403, 429, 429]
    honest, _ = _arrive(Client(), batch, hexid("S"), hexid("m-x"), HTTP_X_FORWARDED_FOR="198.51.100.4")
    assert honest.status_code == 403  # its own budget


def test_an_ipv6_client_is_counted_by_its_64_however_many_addresses_it_sends_from(
    server, provider, batch, client_class, settings
):
    """One IPv6 subscriber has a whole /64 (2**64 addresses): arrivals from five addresses of
    one /64 share its budget (before: each address had its own, an unlimited number of
    clients); another /64 has its own; IPv4 clients stay counted per address."""
    settings.PROLIFIC_ARRIVALS_PER_CLIENT_PER_MINUTE = 3
    _publish(batch, provider)
    one_64 = [f"2001:db8:1:2:{i:x}::{i + 1:x}" for i in range(5)]
    codes = [
        _arrive(client_class(), batch, hexid(f"S{i}"), hexid(f"m-{i}"), REMOTE_ADDR=address)[0].status_code
        for i, address in enumerate(one_64)
    ]
    assert codes == [403, 403, 403, 429, 429]
    assert _asks(server) == 3
    other_64, _ = _arrive(client_class(), batch, hexid("S9"), hexid("m-9"), REMOTE_ADDR="2001:db8:1:3::1")
    assert other_64.status_code == 403
    ipv4 = [
        _arrive(client_class(), batch, hexid(f"T{i}"), hexid(f"n-{i}"), REMOTE_ADDR=f"10.0.2.{i}")[0].status_code
        for i in range(4)
    ]
    assert ipv4 == [403] * 4


def test_the_client_key_is_an_ipv4_address_or_an_ipv6_64():
    from core.services.ratelimit import client_key

    assert client_key("192.0.2.7") == "192.0.2.7"
    assert client_key("2001:db8:1:2:aaaa:bbbb:cccc:dddd") == "2001:db8:1:2::/64"
    assert client_key("2001:0db8:0001:0002::1") == "2001:db8:1:2::/64"
    assert client_key("::ffff:192.0.2.7") == "192.0.2.7"  # an IPv4 client seen through an IPv6 socket
    assert client_key("") == ""  # no address: counted together, as before


def test_new_sessions_checked_per_study_are_limited(server, provider, batch, client_class, settings, monkeypatch):
    from types import SimpleNamespace

    from core.services import ratelimit

    settings.PROLIFIC_ARRIVAL_CHECKS_PER_STUDY_PER_MINUTE = 2
    _publish(batch, provider)
    # The window is a calendar minute (core.services.ratelimit): its clock stands 10 s into one, so the
    # four arrivals are counted in the same window (before, the test waited for the next minute when
    # less than 20 s of this one were left: 6.7 s a run on average, up to 20 s).
    minute = (time.time() // 60 + 1) * 60
    monkeypatch.setattr(ratelimit, "time", SimpleNamespace(time=lambda: minute + 10.0))
    codes = [
        _arrive(client_class(), batch, hexid(f"SYBIL{i}"), hexid(f"made-up-{i}"), REMOTE_ADDR=f"10.0.1.{i}")[0]
        for i in range(4)
    ]
    assert [a.status_code for a in codes] == [403, 403, 503, 503]
    assert _waits(codes[2]) >= 1
    assert _asks(server) == 2
    # Remembered refusals and sessions already confirmed cost no check.
    assert _arrive(client_class(), batch, hexid("SYBIL0"), hexid("made-up-0"))[0].status_code == 403


# -- (d) after the storm -----------------------------------------------------------------------
def test_genuine_participants_get_in_once_the_storm_passes(server, provider, batch, client_class, on_threads):
    """A 429 storm with Retry-After 1: every arrival gets the page that waits; when the storm
    passes, the genuine participant's page, coming back by itself, takes them in; the made-up
    links are refused."""
    _publish(batch, provider)
    server.standing["get_submission"] = "throttle:1"
    real = Participant(server, batch.hit_type_id, hexid("PID1"), client_class)
    _waits(real.arrival)
    for i in range(5):
        _waits(_arrive(client_class(), batch, hexid(f"SYBIL{i}"), hexid(f"made-up-{i}"))[0])
    time.sleep(1)
    del server.standing["get_submission"]
    back = _follow(real.browser, batch, hexid("PID1"), real.session, within=DEADLINE + 10)
    assert back.status_code == 302 and "/prolific/hits/" in back["Location"]
    late = Participant(server, batch.hit_type_id, hexid("PID2"), client_class)
    late_in = _follow(late.browser, batch, hexid("PID2"), late.session, within=DEADLINE + 10)
    assert late_in.status_code == 302
    assert Assignment.objects.count() == 2


# -- (b) a flood against the site as deployed -----------------------------------------------------
ROOT = Path(__file__).resolve().parents[3]
WORKERS, THREADS = 2, 2
PACE = 10  # PROLIFIC_API_CALLS_PER_SECOND's default


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(port: int, path: str, *, source: str = "127.0.0.1", timeout: float = 60) -> tuple[int, str]:
    """One GET from ``source`` (any 127.x address is this machine: a client of its own); (status, Retry-After)."""
    site = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0))
    try:
        site.request("GET", path)
        answer = site.getresponse()
        answer.read()
        return answer.status, answer.getheader("Retry-After") or ""
    except OSError:
        return 0, ""
    finally:
        site.close()


@pytest.fixture
def site(transactional_db, server, tmp_path, settings):
    """gunicorn with the shipped configuration (WORKERS x THREADS), on this test's database, pointed at ``server``."""
    import subprocess

    # The shipped pace, which the flood asserts (the suite's is faster), here and in gunicorn alike: the
    # slots of the pace are counted per rate (core.services.ratelimit.reserve_start), and the flood counts
    # gunicorn's calls against the shipped one.
    settings.PROLIFIC_API_CALLS_PER_SECOND = PACE
    env = {
        **os.environ,
        "VAR_DIR": str(tmp_path / "var"),
        "PROLIFIC_API_URL": settings.PROLIFIC_API_URL,
        "PROLIFIC_API_TOKEN": TOKEN,
        "PROLIFIC_ARRIVAL_TIMEOUT_SECONDS": str(TIMEOUT),
        "PROLIFIC_ARRIVAL_DEADLINE_SECONDS": str(DEADLINE),
        "PROLIFIC_ARRIVALS_PER_CLIENT_PER_MINUTE": "5",
        "PROLIFIC_API_CALLS_PER_SECOND": str(PACE),
        "JOB_LOCAL_RUNNER": "threads",  # as deployed: the suite's "inline" would check in the request
        "GUNICORN_TIMEOUT": "120",
    }
    state = {"env": env, "port": _free_port(), "log": tmp_path / "gunicorn.log"}

    def start(workers: int = WORKERS, threads: int = THREADS):
        # No memory of earlier tests: the shared cache's table is no model's, so a transactional test's
        # rows (links' checks, failures, paces) outlive its flush.
        shared_cache().clear()
        if connection.vendor == "sqlite":  # the in-memory test database, copied to a file gunicorn opens
            path = tmp_path / "site.sqlite3"
            path.unlink(missing_ok=True)
            connection.ensure_connection()
            with sqlite3.connect(path) as copy:
                connection.connection.backup(copy)
            env["DATABASE_URL"] = f"sqlite:///{path}"
            state["database"] = path
        else:
            from tests.faults.servers import database_url

            env["DATABASE_URL"] = database_url(connection.settings_dict)
        args = [sys.executable, "-m", "gunicorn", "-c", "python:config.gunicorn", "config.wsgi"]
        args += ["--bind", f"127.0.0.1:{state['port']}", "--workers", str(workers), "--threads", str(threads)]
        with open(state["log"], "ab") as out:
            state["process"] = subprocess.Popen(
                args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        deadline = time.monotonic() + 60
        while (up := _get(state["port"], "/accounts/login/", timeout=5)[0]) != 200:
            if state["process"].poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert up == 200, state["log"].read_text()[-3000:]
        return state["port"]

    def stop() -> None:
        """The master and its workers killed at once (the process group): what the test asserts is
        answered by then, and a graceful stop (SIGTERM) waited about 3.5 s a time, a quick one
        (SIGQUIT) longer still, for the workers' check threads (issue 55: idle time)."""
        import signal

        process = state.get("process")
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)

    state["start"], state["stop"] = start, stop
    yield state
    stop()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_flood_of_made_up_arrivals_while_prolific_throttles_leaves_the_site_answering(server, provider, batch, site):
    """gunicorn 2 workers x 2 threads; Prolific answers every session check with 429 and
    Retry-After 30, then with a 5 s wait. 60 made-up arrivals from 30 client addresses, 12
    at a time, while another client logs in: login pages are answered while the flood is in flight,
    every arrival gets the page that waits (202 or 503) without waiting for its check (with a 5 s
    Prolific: "check under way", never the check's failure), each link's check asks
    Prolific once (the 429's Retry-After is past the deadline) or twice (each attempt at a
    5 s answer times out at half the deadline), and the calls of both workers together start
    within the shared pace (10 a second). A client sending 8 arrivals is limited across both
    workers (the count is shared). After the storm a genuine participant gets in.
    """
    _publish(batch, provider)
    port = site["start"]()
    path = reverse("annotation:prolific-start", args=[batch.name])

    def made_up(storm: str, i: int) -> tuple[int, str]:
        # Links of their own in each storm: on PostgreSQL the site keeps running between storms, and a
        # link whose check failed in the first (429, Retry-After 30) is answered from its memory in the
        # second (503 and the rest of its 30 s), asking Prolific nothing, which is not what the second tests.
        session = hexid(f"{storm[0]}{i}")  # t0…t59, s0…s59
        query = urlencode({"PROLIFIC_PID": hexid(f"SYBIL{i}"), "STUDY_ID": batch.hit_type_id, "SESSION_ID": session})
        return _get(port, f"{path}?{query}", source=f"127.0.{1 + i % 30}.{1 + i // 30}")

    for storm in ("throttle:30", "slow:5"):
        server.standing["get_submission"] = storm
        asked_before = _asks(server)
        calls_before = len(server.call_times)
        with ThreadPoolExecutor(12) as pool:
            flood = [pool.submit(made_up, storm, i) for i in range(60)]
            logins, during = [], 0  # the login pages, and how many came back with arrivals still unanswered
            while not all(f.done() for f in flood) or len(logins) < 3:
                logins.append(_get(port, "/accounts/login/"))
                during += not all(f.done() for f in flood)
                time.sleep(0.05)
            results = [f.result() for f in flood]
        statuses = {status for status, _ in results}
        assert statuses <= set(WAITING), f"{storm}: {statuses}"
        assert all(status == 200 for status, _ in logins), logins
        assert during >= 1, f"{storm}: no login page came back while the flood was in flight"
        if storm.startswith("slow"):
            # Prolific holds every call 5 s, past the check's deadline: a request that waited for its
            # check would carry the check's failure (503 and the refresh time). Every arrival answered
            # "check under way" (202), or 503 with the view's 5 s where the database was busy.
            waited = [r for r in results if r[0] != 202 and r != (503, "5")]
            assert not waited, f"{storm}: arrivals that waited for their check: {waited}"
        ends = time.monotonic() + DEADLINE + 1  # the checks still under way end by their deadline
        while time.monotonic() < ends:
            time.sleep(0.1)
        assert _asks(server) - asked_before <= 60 * (1 if storm.startswith("throttle") else 2)
        times = [at for name, at in server.call_times[calls_before:] if name == "get_submission"]
        # The pace over any 3 s: the fake Prolific stamps a call when its handler thread runs, in this process beside
        # the flood's 13 client threads, so under load one second's stamps bunch by a few (14 seen against 12); over
        # 3 s that shifts no more than the 2 allowed, and a site that did not pace would send all 60 at once.
        assert max(sum(1 for t in times if start <= t < start + 3) for start in times) <= 3 * 10 + 2
        if connection.vendor == "sqlite":
            site["stop"]()  # start again on a fresh copy: no link's memory carried over
            site["start"]()

    # One client past its rate, whichever worker serves it: the count is shared between them.
    # The count is kept per minute of the clock (core.services.ratelimit.over_limit): the eight
    # arrivals are sent well inside one minute, never across its end (where the count starts again).
    if time.time() % 60 > 45:
        time.sleep(61 - time.time() % 60)
    one_client = [
        _get(
            port,
            f"{path}?"
            + urlencode({"PROLIFIC_PID": hexid("S"), "STUDY_ID": batch.hit_type_id, "SESSION_ID": hexid(f"one-{i}")}),
            source="127.0.99.1",
        )
        for i in range(8)
    ]
    assert [status for status, _ in one_client].count(429) == 3, one_client

    # The storm passes: a genuine participant gets in.
    del server.standing["get_submission"]
    if connection.vendor == "sqlite":
        site["stop"]()
        site["start"]()
    _session, url = server.start(batch.hit_type_id, hexid("PIDREAL"))
    parts = url.split("/", 3)[3]
    # At once, or (where the flood's waits ran out in this process, so no request waits for a
    # check until one answers in time again: PostgreSQL keeps its site running) by the waiting
    # page's own refreshes, as the participant's browser follows them: within two of them.
    status, retry_after = _get(port, f"/{parts}", source="127.0.200.1")
    refreshes = 0
    while status in WAITING and refreshes < 2:
        time.sleep(int(retry_after))
        status, retry_after = _get(port, f"/{parts}", source="127.0.200.1")
        refreshes += 1
    assert status == 302, (status, refreshes)  # at once or within two of the waiting page's refreshes
    log = site["log"].read_text()
    assert "Traceback" not in log, log[-3000:]


def test_the_fixed_window_counts_per_key_and_starts_again_each_window():
    """core.services.ratelimit on the shared (database) cache: ``limit`` events pass in a window, the next
    are told the seconds left in it; another key counts apart; the next window starts at zero."""
    from core.services.ratelimit import over_limit

    assert [over_limit("k", 2, now=125.0) for _ in range(4)] == [0, 0, 55, 55]
    assert over_limit("other", 2, now=170.0) == 0
    assert over_limit("k", 2, now=179.5) == 1  # still the window 120-180: rounded up to a whole second
    assert over_limit("k", 2, now=180.0) == 0

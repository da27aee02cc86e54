"""The one outbound HTTP client (core.http) against a hostile server over real HTTP.

Slow drip, 429 storms, Retry-After beyond the deadline, huge bodies (with and without a
length), redirects to another host, truncated and non-JSON answers, calls that are not
safe to repeat. No assertion reads a clock: a deadline is shown by the server (the client hung
up before the drip's end) or by the client's own clock and sleeps, given to it as a fake.
"""

from __future__ import annotations

import pytest

from core.http import HttpError, JsonClient
from tests.loopback import drips_ended


class FakeClock:
    """The client's ``clock`` and ``sleep``: time passes only when the client sleeps."""

    def __init__(self) -> None:
        self.now, self.slept = 1000.0, []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def client(fake, **options):
    options.setdefault("sleep", lambda seconds: None)
    return JsonClient(fake.url, {"Authorization": "Token secret"}, **options)


def test_an_answer_is_read_as_json(hostile):
    assert client(hostile).request("GET", "things/") == {"ok": True}
    assert hostile.requests == [("GET", "/things/", "Token secret")]


@pytest.mark.parametrize("version", ["HTTP/1.1", "HTTP/1.0"])
def test_a_slow_drip_cannot_hold_a_call_past_its_deadline(hostile, version):
    hostile.version = version
    hostile.script = ["drip"]  # a byte every 0.2 s: each read is well inside the 1 s timeout
    with pytest.raises(HttpError, match="deadline") as caught:
        client(hostile, timeout=1.0, deadline=1.5).request("GET", "x")
    assert caught.value.kind == "deadline" and caught.value.upstream
    assert drips_ended(hostile.drips) == [True]  # the client hung up before the drip's 6 s were over
    assert len(hostile.requests) == 1  # the deadline is the whole call's: not tried again


def test_a_429_storm_without_retry_after_stops_at_the_deadline(hostile):
    hostile.script = ["throttle"] * 50
    clock = FakeClock()
    with pytest.raises(HttpError, match="would pass the 1 s deadline") as caught:
        client(hostile, base_delay=0.2, max_attempts=20, deadline=1.0, sleep=clock.sleep, clock=clock).request(
            "GET", "x"
        )
    assert clock.slept == [0.2, 0.4]  # 0.6 s of the 1 s waited; the next wait, 0.8 s, is not begun
    assert caught.value.status == 429 and caught.value.kind == "throttled"
    assert len(hostile.requests) == 3  # waits of 0.2 and 0.4 s; the next, 0.8 s, would pass the deadline


def test_a_retry_after_beyond_the_deadline_is_not_waited_for(hostile):
    hostile.script = ["throttle:30"]
    sleeps = []
    with pytest.raises(HttpError, match="waiting 30 s more would pass the 5 s deadline"):
        client(hostile, deadline=5.0, max_delay=60, sleep=sleeps.append).request("GET", "x")
    assert sleeps == [] and len(hostile.requests) == 1


def test_retry_after_is_honoured_within_the_deadline(hostile):
    hostile.script = ["throttle:2", "error", "ok"]
    sleeps = []
    assert client(hostile, sleep=sleeps.append).request("GET", "x") == {"ok": True}
    assert sleeps == [2.0, 1.0]  # Retry-After, then 0.5 s × 2^(2 - 1)


@pytest.mark.parametrize("behaviour", ["huge", "huge_chunked"])
def test_a_huge_answer_is_refused_without_reading_it(hostile, behaviour):
    hostile.script = [behaviour]
    with pytest.raises(HttpError, match="more than the limit of 100000 bytes") as caught:
        client(hostile, max_bytes=100_000).request("GET", "x")
    assert caught.value.kind == "too_large" and caught.value.upstream
    assert len(hostile.requests) == 1  # not asked again: the same answer would come back


def test_a_redirect_is_never_followed_and_the_key_stays_home(hostile, elsewhere):
    hostile.script = ["redirect"]
    hostile.redirect_to = elsewhere.url + "steal"
    with pytest.raises(HttpError, match="HTTP 302: a redirect") as caught:
        client(hostile).request("POST", "x", {"a": 1})
    assert caught.value.kind == "redirect" and caught.value.status == 302
    assert elsewhere.requests == []


def test_an_address_outside_the_origin_is_refused_before_sending(hostile, elsewhere):
    with pytest.raises(HttpError, match="outside") as caught:
        client(hostile).request("GET", elsewhere.url + "next-page")
    assert caught.value.kind == "origin"
    assert elsewhere.requests == [] and hostile.requests == []
    assert client(hostile).request("GET", hostile.url + "next-page") == {"ok": True}  # the same origin is fine


@pytest.mark.parametrize("behaviour", ["truncated", "lose", "garbage", 'json:{"a": [1,', "error"])
def test_lost_truncated_and_unreadable_answers_are_retried(hostile, behaviour):
    hostile.script = [behaviour, behaviour]
    assert client(hostile).request("GET", "x") == {"ok": True}
    assert len(hostile.requests) == 3


@pytest.mark.parametrize("behaviour", ["truncated", "lose", "garbage", "error", "huge"])
def test_a_call_that_is_not_repeatable_reports_an_unknown_outcome(hostile, behaviour):
    hostile.script = [behaviour]
    with pytest.raises(HttpError) as caught:
        client(hostile, max_bytes=1000).request("POST", "pay", {}, repeatable=False)
    assert caught.value.unknown_outcome and caught.value.upstream
    assert len(hostile.requests) == 1


def test_a_throttled_call_that_is_not_repeatable_is_still_retried(hostile):
    hostile.script = ["throttle:0", "ok"]
    assert client(hostile).request("POST", "pay", {}, repeatable=False) == {"ok": True}
    assert len(hostile.requests) == 2


def test_a_refusal_is_not_retried_and_keeps_its_body(hostile):
    hostile.script = ["status:404"]
    with pytest.raises(HttpError, match="HTTP 404") as caught:
        client(hostile).request("GET", "x")
    assert caught.value.kind == "refused" and not caught.value.upstream
    assert "refused here" in caught.value.text and len(hostile.requests) == 1


def test_the_give_up_message_counts_attempts(hostile):
    hostile.script = ["error"] * 4
    with pytest.raises(HttpError, match="HTTP 500 after 4 attempts") as caught:
        client(hostile, max_attempts=4).request("GET", "x")
    assert caught.value.attempts == 4 and not caught.value.unknown_outcome


def test_an_address_that_is_not_http_is_refused_at_once(hostile):
    with pytest.raises(ValueError, match="not an http"):
        JsonClient("ftp://example.org/")
    with pytest.raises(HttpError, match="outside"):
        client(hostile).request("GET", "http://127.0.0.1:notaport/x")
    assert hostile.requests == []


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("PRELABEL_MAX_FAILURE_SHARE", "2", "a number of at most 1.0"),
        ("PRELABEL_JOB_DEADLINE", "soon", "a number"),
        ("PRELABEL_MAX_RESPONSE_BYTES", "10", "a whole number of at least 1024"),
    ],
)
def test_outbound_settings_fail_loudly(monkeypatch, name, value, expected):
    from django.core.exceptions import ImproperlyConfigured

    from config.env import env_float, env_int

    monkeypatch.setenv(name, value)
    read = {
        "PRELABEL_MAX_FAILURE_SHARE": lambda: env_float(name, 0.25, minimum=0.01, maximum=1.0),
        "PRELABEL_JOB_DEADLINE": lambda: env_float(name, 7200.0, minimum=1.0),
        "PRELABEL_MAX_RESPONSE_BYTES": lambda: env_int(name, 1_000_000, minimum=1024),
    }[name]
    with pytest.raises(ImproperlyConfigured, match=f"{name}={value!r}: expected {expected}"):
        read()


def test_a_paced_call_waits_for_its_start_and_each_retry_asks_again(hostile):
    """Issue 41: ``pace`` is asked before every attempt with the time left; the call sleeps what it
    answers, so the site's calls together keep a shared rate (core.services.ratelimit.shared_pace)."""
    hostile.script = ["throttle:1", "ok"]
    asked, sleeps = [], []

    def pace(within: float) -> float:
        asked.append(within)
        return 0.25

    assert client(hostile, deadline=5.0, pace=pace, sleep=sleeps.append).request("GET", "x") == {"ok": True}
    assert len(asked) == 2 and 4.0 < asked[1] <= asked[0] <= 5.0
    assert sleeps == [0.25, 1.0, 0.25]  # the start, the 429's Retry-After, the retry's start


def test_a_call_with_no_free_start_before_its_deadline_fails_at_once_having_sent_nothing(hostile):
    for answer in (None, 7.0):  # none free at all, or only one past the 5 s deadline
        with pytest.raises(HttpError, match="no free start of the shared rate") as caught:
            client(hostile, deadline=5.0, pace=lambda within, answer=answer: answer).request(
                "POST", "x", {}, repeatable=False
            )
        assert caught.value.kind == "throttled" and caught.value.upstream and not caught.value.unknown_outcome
    assert hostile.requests == []


def test_a_retry_after_past_the_deadline_is_reported_with_the_failure(hostile):
    """The caller learns how long the server asked to wait (a Prolific arrival's link then waits it)."""
    hostile.script = ["throttle:30"]
    with pytest.raises(HttpError) as caught:
        client(hostile, deadline=5.0, max_delay=60).request("GET", "x")
    assert caught.value.retry_after == 30.0

"""Prolific's client on the shared transport (core.http), against a hostile server over real HTTP.

Before the transport was shared, an ``IncompleteRead`` or a 200 that is not JSON escaped the
Prolific client as a raw Python error, a drip held the call past any bound, and a redirect
was followed with the token.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from platforms.prolific.client import Prolific, ProlificError, ProlificUnknownOutcome
from tests.loopback import drips_ended


def prolific(fake, **options):
    options.setdefault("sleep", lambda seconds: None)
    return Prolific(fake.url + "api/v1/", "tok", **options)


@pytest.mark.parametrize("behaviour", ["truncated", "garbage"])
def test_a_truncated_or_non_json_answer_is_a_prolific_error(hostile, behaviour):
    hostile.script = [behaviour] * 6
    with pytest.raises(ProlificError, match=r"Prolific GET studies/s1/: .* after 6 attempts") as caught:
        prolific(hostile).get_study("s1")
    assert caught.value.upstream and len(hostile.requests) == 6
    hostile.script = [behaviour]
    assert prolific(hostile).get_study("s1") == {"ok": True}  # retried: a read is safe to repeat


def test_a_lost_answer_to_a_call_that_is_not_repeatable_is_an_unknown_outcome(hostile):
    hostile.script = ["truncated"]
    with pytest.raises(ProlificUnknownOutcome, match="may have been done"):
        prolific(hostile).pay_bonuses("b1")
    assert len(hostile.requests) == 1


def test_a_slow_drip_is_bounded_by_the_deadline(hostile):
    hostile.script = ["drip"]
    with pytest.raises(ProlificError, match="deadline"):
        prolific(hostile, timeout=1.0, deadline=1.5).get_study("s1")
    assert drips_ended(hostile.drips) == [True]  # the client hung up before the drip's 6 s were over
    assert len(hostile.requests) == 1


def test_a_redirect_is_not_followed_with_the_token(hostile, elsewhere):
    hostile.script = ["redirect"]
    hostile.redirect_to = elsewhere.url + "api/v1/studies/s1/"
    with pytest.raises(ProlificError, match="HTTP 302"):
        prolific(hostile).get_study("s1")
    assert elsewhere.requests == []


def test_a_next_page_link_to_another_host_is_refused(hostile, elsewhere):
    page = json.dumps({"results": [{"id": "a"}], "_links": {"next": {"href": elsewhere.url + "api/v1/steal"}}})
    hostile.script = ["json:" + page]
    with pytest.raises(ProlificError, match="outside"):
        list(prolific(hostile).pages("studies/"))
    assert elsewhere.requests == []


def test_a_huge_answer_is_refused(hostile):
    hostile.script = ["huge"]
    with pytest.raises(ProlificError, match="more than the limit of 1000 bytes"):
        prolific(hostile, max_bytes=1000).get_study("s1")
    assert len(hostile.requests) == 1


def test_a_short_single_attempt_client_answers_at_once(hostile):
    """What a web request may use (arrivals): one attempt, a short timeout, nothing slept."""
    hostile.script = ["throttle:30"]
    slept = []
    with pytest.raises(ProlificError, match="HTTP 429") as caught:
        prolific(hostile, max_attempts=1, timeout=0.5, sleep=slept.append).get_study("s1")
    assert caught.value.upstream and caught.value.retry_after == 30
    assert slept == [] and len(hostile.requests) == 1  # answered at once: one call, no wait


@pytest.mark.parametrize(
    ("answer", "call"),
    [
        ('{"participant": "p1"}', lambda client: client.get_submission("s1")),
        ("[1, 2]", lambda client: client.get_submission("s1")),
        ('{"results": ["x"]}', lambda client: list(client.submissions("st1"))),
        ('{"results": 3}', lambda client: list(client.submissions("st1"))),
        ('{"cost": 1}', lambda client: client.study_cost(Decimal("1.00"), 2)),
        ('{"total_cost": "lots"}', lambda client: client.study_cost(Decimal("1.00"), 2)),
        ("{}", lambda client: client.set_up_bonuses("st1", {"p1": Decimal("1.00")})),
    ],
)
def test_json_of_the_wrong_shape_is_a_prolific_error(hostile, answer, call):
    hostile.script = ["json:" + answer]
    with pytest.raises(ProlificError) as caught:
        call(prolific(hostile))
    assert caught.value.upstream and caught.value.status == 502

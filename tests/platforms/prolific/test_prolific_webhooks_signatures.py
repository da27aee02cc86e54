"""Verifying a Prolific webhook delivery (platforms.prolific.signatures): pure, no Django.

The expected signatures are computed as Prolific's reference shows it ("Verifying": base64 of
HMAC-SHA256 with the workspace's secret over the timestamp followed by the body), written out
here independently of the module under test. The bodies are the reference's ("Receiving").
"""

import base64
import hashlib
import hmac
import json

import pytest

from platforms.prolific.signatures import (
    EVENT_TYPES,
    MAX_BODY_BYTES,
    MAX_METADATA_CHARS,
    DeliveryRefused,
    read_delivery,
    sign,
    signature_matches,
)

SECRET = "cGNqFPb6y0RT3XO9XVSessBDYIbHQ-test"
NOW = 1_800_000_000
SESSION = "a1b2c3d4e5f6a1b2c3d4e5f6"


def reference_signature(secret: str, timestamp: str, body: dict) -> tuple[bytes, str]:
    """Prolific's documented Python example, verbatim in substance: (body as sent, signature)."""
    text = json.dumps(body)
    signature = base64.b64encode(hmac.new(secret.encode(), str.encode(timestamp + text), hashlib.sha256).digest())
    return text.encode(), signature.decode()


def delivery(body=None, *, timestamp=NOW, secret=SECRET, event_id="evt-1", **override):
    body = body or {"resource_id": SESSION, "event_type": "submission.status.change", "status": "RETURNED"}
    raw, signature = reference_signature(secret, str(timestamp), body)
    headers = {
        "X-Prolific-Request-Signature": signature,
        "X-Prolific-Request-Timestamp": str(timestamp),
        "X-Event-ID": event_id,
    }
    headers.update(override)
    return headers, raw


def test_a_genuine_delivery_is_read():
    headers, raw = delivery()
    got = read_delivery(headers, raw, SECRET, now=NOW + 10)
    assert (got.event_id, got.event_type, got.resource_id, got.timestamp) == (
        "evt-1",
        "submission.status.change",
        SESSION,
        NOW,
    )
    # The replay guard's key is the signature's 32 decoded bytes, hashed (not its base64 text).
    decoded = base64.b64decode(headers["X-Prolific-Request-Signature"])
    assert len(decoded) == 32 and got.signature_digest == hashlib.sha256(decoded).hexdigest()
    # The module signs exactly as the reference does, and headers are found whatever their case.
    assert sign(SECRET, str(NOW), raw) == headers["X-Prolific-Request-Signature"]
    lower = {k.lower(): v for k, v in headers.items()}
    assert read_delivery(lower, raw, SECRET, now=NOW).event_id == "evt-1"


@pytest.mark.parametrize(
    "change",
    ["another secret", "body changed", "timestamp changed", "signature of another body", "not base64", "empty"],
)
def test_a_forged_or_altered_delivery_is_refused_403(change):
    headers, raw = delivery()
    if change == "another secret":
        headers, raw = delivery(secret="guessed")
    elif change == "body changed":
        raw = raw.replace(b"RETURNED", b"APPROVED")
    elif change == "timestamp changed":
        headers["X-Prolific-Request-Timestamp"] = str(NOW + 1)
    elif change == "signature of another body":
        headers["X-Prolific-Request-Signature"] = delivery({"resource_id": "x", "event_type": "y"})[0][
            "X-Prolific-Request-Signature"
        ]
    elif change == "not base64":
        headers["X-Prolific-Request-Signature"] = "not base64 at all!"
    elif change == "empty":
        headers["X-Prolific-Request-Signature"] = "=="
    with pytest.raises(DeliveryRefused) as refused:
        read_delivery(headers, raw, SECRET, now=NOW)
    assert (refused.value.status, refused.value.code) == (403, "bad_signature")


def test_no_secret_verifies_nothing():
    headers, raw = delivery(secret="")
    with pytest.raises(DeliveryRefused) as refused:
        read_delivery(headers, raw, "", now=NOW)
    assert refused.value.status == 403


@pytest.mark.parametrize("skew", [301, -301, 10_000, -10_000])
def test_a_stale_or_future_timestamp_is_refused_even_when_signed(skew):
    headers, raw = delivery()
    with pytest.raises(DeliveryRefused) as refused:
        read_delivery(headers, raw, SECRET, now=NOW + skew)
    assert (refused.value.status, refused.value.code) == (400, "stale")
    # Inside the window it is accepted (the boundary is inclusive).
    assert read_delivery(headers, raw, SECRET, now=NOW + (300 if skew > 0 else -300)).event_id == "evt-1"


@pytest.mark.parametrize(
    "header, value, code",
    [
        ("X-Prolific-Request-Signature", None, "missing_header"),
        ("X-Prolific-Request-Timestamp", None, "missing_header"),
        ("X-Event-ID", None, "missing_header"),
        ("X-Event-ID", "   ", "missing_header"),
        ("X-Prolific-Request-Timestamp", "1.8e9", "malformed_timestamp"),
        ("X-Prolific-Request-Timestamp", "-1800000000", "malformed_timestamp"),
        ("X-Prolific-Request-Timestamp", "1800000000.", "malformed_timestamp"),
        ("X-Prolific-Request-Timestamp", ".5", "malformed_timestamp"),
        ("X-Prolific-Request-Timestamp", "+1800000000", "malformed_timestamp"),
        ("X-Prolific-Request-Timestamp", "1800000000,5", "malformed_timestamp"),
        ("X-Prolific-Request-Timestamp", "2027-01-15T08:00:00Z", "malformed_timestamp"),
        ("X-Prolific-Request-Timestamp", "nan", "malformed_timestamp"),
        ("X-Event-ID", "a" * 101, "malformed_event_id"),
        ("X-Event-ID", "evt/../1", "malformed_event_id"),
    ],
)
def test_malformed_headers_are_refused_400(header, value, code):
    headers, raw = delivery()
    if value is None:
        del headers[header]
    else:
        headers[header] = value
    with pytest.raises(DeliveryRefused) as refused:
        read_delivery(headers, raw, SECRET, now=NOW)
    assert (refused.value.status, refused.value.code) == (400, code)


@pytest.mark.parametrize(
    "body",
    [
        [1, 2],
        {"event_type": "submission.status.change"},
        {"resource_id": SESSION},
        {"resource_id": "../../etc", "event_type": "submission.status.change"},
        {"resource_id": 7, "event_type": "submission.status.change"},
    ],
)
def test_a_signed_body_of_the_wrong_shape_is_refused_400(body):
    text = json.dumps(body).encode()
    headers = {
        "X-Prolific-Request-Signature": sign(SECRET, str(NOW), text),
        "X-Prolific-Request-Timestamp": str(NOW),
        "X-Event-ID": "evt-1",
    }
    with pytest.raises(DeliveryRefused) as refused:
        read_delivery(headers, text, SECRET, now=NOW)
    assert (refused.value.status, refused.value.code) == (400, "malformed_body")


@pytest.mark.parametrize("event_type", ["study.unknown_thing", "Study.Status.Change", "study.status.change "])
def test_a_signed_body_of_an_event_type_this_site_does_not_subscribe_to_is_refused_400(event_type):
    """Issue 82: a correctly signed body of an unknown event type was recorded; it is refused (the types are
    the four the site subscribes to, written out here, not read from the module)."""
    headers, raw = delivery({"resource_id": SESSION, "event_type": event_type})
    with pytest.raises(DeliveryRefused) as refused:
        read_delivery(headers, raw, SECRET, now=NOW)
    assert (refused.value.status, refused.value.code) == (400, "unknown_event_type")
    assert "submission.status.change, study.status.change" in str(refused.value)


def test_a_signed_body_that_is_not_json_and_an_oversized_one_are_refused():
    text = b"\xff\xfe not json"
    headers = {
        "X-Prolific-Request-Signature": sign(SECRET, str(NOW), text),
        "X-Prolific-Request-Timestamp": str(NOW),
        "X-Event-ID": "evt-1",
    }
    with pytest.raises(DeliveryRefused) as refused:
        read_delivery(headers, text, SECRET, now=NOW)
    assert refused.value.code == "malformed_body"
    big = b" " * (MAX_BODY_BYTES + 1)
    headers["X-Prolific-Request-Signature"] = sign(SECRET, str(NOW), big)
    with pytest.raises(DeliveryRefused) as refused:
        read_delivery(headers, big, SECRET, now=NOW)
    assert refused.value.status == 413


def test_the_compare_is_hmacs_constant_time_one(monkeypatch):
    """The comparison goes through hmac.compare_digest (no early exit on the first differing byte)."""
    calls = []
    real = hmac.compare_digest
    monkeypatch.setattr(hmac, "compare_digest", lambda a, b: calls.append((a, b)) or real(a, b))
    headers, raw = delivery()
    assert signature_matches(SECRET, str(NOW), raw, headers["X-Prolific-Request-Signature"])
    assert not signature_matches(SECRET, str(NOW), raw + b" ", headers["X-Prolific-Request-Signature"])
    assert len(calls) == 2


@pytest.mark.parametrize("stamp", ["1800000000", "1800000000.5", "1800000000.123456", "1800000000.1234567890123"])
def test_every_unix_time_the_reference_allows_is_accepted_whole_or_fractional(stamp):
    """ "A UNIX timestamp of when the request was sent": whole seconds or with a fractional part (Python's
    ``str(time.time())``), signed as its text; still bounded by the maximum age."""
    headers, raw = delivery(timestamp=stamp)
    got = read_delivery(headers, raw, SECRET, now=NOW + 100)
    assert got.timestamp == float(stamp)
    # Bounded either way, the fractional part counted: 300 s after it is fine, a little more is stale.
    assert read_delivery(headers, raw, SECRET, now=float(stamp) + 300).event_id == "evt-1"
    with pytest.raises(DeliveryRefused) as refused:
        read_delivery(headers, raw, SECRET, now=float(stamp) + 300.001)
    assert refused.value.code == "stale"
    with pytest.raises(DeliveryRefused) as refused:
        read_delivery(headers, raw, SECRET, now=float(stamp) - 300.001)
    assert refused.value.code == "stale"
    # The text is what is signed: the same instant written otherwise does not verify.
    if "." in stamp:
        headers["X-Prolific-Request-Timestamp"] = stamp + "0"
        with pytest.raises(DeliveryRefused) as refused:
            read_delivery(headers, raw, SECRET, now=NOW)
        assert refused.value.code == "bad_signature"


def _respellings(signature: str) -> dict[str, str]:
    """Other spellings of the same 32 bytes: each decodes to them in some base64 decoder."""
    raw = base64.b64decode(signature)
    last = signature[-2]  # the last data character: its two low bits are padding, unused
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    spare = alphabet[alphabet.index(last) ^ 1]
    spellings = {
        "unused bits set": signature[:-2] + spare + "=",
        "no padding": signature.rstrip("="),
        "double padding": signature + "=",
        "urlsafe alphabet": base64.urlsafe_b64encode(raw).decode(),
        "line break inside": signature[:20] + "\n" + signature[20:],
        "space inside": signature[:20] + " " + signature[20:],
    }
    assert base64.b64decode(spellings["unused bits set"], validate=True) == raw  # Python itself accepts this one
    return {name: text for name, text in spellings.items() if text != signature}


def test_another_spelling_of_a_genuine_signature_does_not_verify():
    """The reference compares the base64 texts (``hmac.compare_digest(calculated_signature, signature)``):
    a captured signature re-spelled (the same bytes) is refused 403, so it cannot be replayed as new."""
    headers, raw = delivery()
    genuine = headers["X-Prolific-Request-Signature"]
    respelled = _respellings(genuine)
    # Make sure one of them changes only the unused bits (the case a bytes comparison let through).
    assert "unused bits set" in respelled
    for name, text in respelled.items():
        with pytest.raises(DeliveryRefused) as refused:
            read_delivery({**headers, "X-Prolific-Request-Signature": text}, raw, SECRET, now=NOW)
        assert (refused.value.status, refused.value.code) == (403, "bad_signature"), name


def test_the_four_event_types_of_the_reference_are_read_with_a_high_return_rates_metadata():
    study = "b1b2c3d4e5f6a1b2c3d4e5f6"
    bodies = {
        "submission.status.change": {
            "resource_id": SESSION,
            "event_type": "submission.status.change",
            "participant_id": "p" * 24,
            "status": "RETURNED",
        },
        "study.status.change": {
            "resource_id": study,
            "event_type": "study.status.change",
            "metadata": {},
            "status": "ACTIVE",
        },
        "study.progress.change": {"resource_id": study, "event_type": "study.progress.change"},
        "study.has_high_return_rate": {
            "resource_id": study,
            "event_type": "study.has_high_return_rate",
            "metadata": {"return_rate": 0.41},
        },
    }
    assert set(bodies) == set(EVENT_TYPES)
    for event_type, body in bodies.items():
        headers, raw = delivery(body)
        got = read_delivery(headers, raw, SECRET, now=NOW)
        assert (got.event_type, got.resource_id) == (event_type, body["resource_id"])
        assert got.metadata == ({"return_rate": 0.41} if event_type == "study.has_high_return_rate" else {})
    # Metadata that is no object, or too large to show, is left out (the event is still read).
    for metadata in ([1, 2], "x", {"note": "x" * MAX_METADATA_CHARS}):
        body = {"resource_id": study, "event_type": "study.has_high_return_rate", "metadata": metadata}
        headers, raw = delivery(body)
        assert read_delivery(headers, raw, SECRET, now=NOW).metadata == {}

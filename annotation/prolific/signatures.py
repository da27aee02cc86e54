"""Prolific's webhook deliveries: their signature checked, their headers and body read. Pure (no Django).

Prolific signs each delivery with the workspace's secret (``POST /hooks/secrets/``): the
``X-Prolific-Request-Signature`` header is the base64 of HMAC-SHA256 over the
``X-Prolific-Request-Timestamp`` header (a UNIX time, in seconds) followed by the raw body
(docs.prolific.com/api-reference/webhooks/verifying). ``X-Event-ID`` names the event and
stays the same when Prolific delivers it again (at least once, in no guaranteed order).

:func:`read_delivery` refuses, before anything is stored or done:

- a delivery without the headers, or with a timestamp that is not a whole number (400);
- a body larger than :data:`MAX_BODY_BYTES` (413);
- a timestamp more than ``max_age`` seconds from now, either way (400, *stale*): a
  captured delivery cannot be replayed later;
- a signature that is not the secret's over that timestamp and body, compared in
  constant time (403): a forged delivery, or a body or timestamp changed on the way;
- a signed body that is not a JSON object with an event type and a resource id (400).

It then gives the :class:`Delivery`: the event's id, type and the id of the resource it is
about (a submission or a study). Nothing else of the body is kept: the receiver re-reads
that resource from Prolific and believes only what Prolific answers then. The
``signature_digest`` (SHA-256 of the signature) lets the receiver refuse a replay of the
same signed request under another event id within the timestamp's window.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

SIGNATURE_HEADER = "X-Prolific-Request-Signature"
TIMESTAMP_HEADER = "X-Prolific-Request-Timestamp"
EVENT_ID_HEADER = "X-Event-ID"
#: A delivery signed longer ago than this (seconds), or this far in the future, is refused.
MAX_AGE_SECONDS = 300
#: Prolific's events are a few hundred bytes; anything much larger is not one.
MAX_BODY_BYTES = 64 * 1024
#: The events the platform subscribes to.
SUBMISSION_STATUS = "submission.status.change"
STUDY_STATUS = "study.status.change"
EVENT_TYPES = (SUBMISSION_STATUS, STUDY_STATUS)
_EVENT_ID = re.compile(r"[A-Za-z0-9._:-]{1,100}")
_RESOURCE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_TIMESTAMP = re.compile(r"[0-9]{1,12}")


class DeliveryRefused(Exception):
    """A delivery that is not acted on; ``status`` is the HTTP status to answer, ``code`` a short name."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code


@dataclass(frozen=True)
class Delivery:
    """What a verified delivery says: which event, of which type, about which resource."""

    event_id: str
    event_type: str
    resource_id: str
    timestamp: int
    signature_digest: str


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The signature Prolific sends: base64(HMAC-SHA256(secret, timestamp + body))."""
    digest = hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


def signature_matches(secret: str, timestamp: str, body: bytes, signature: str) -> bool:
    """Whether ``signature`` is the secret's over ``timestamp`` and ``body`` (constant-time compare)."""
    try:
        given = base64.b64decode(signature.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error, ValueError):
        return False
    expected = hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()
    return hmac.compare_digest(expected, given)


def _header(headers: Mapping[str, str], name: str) -> str:
    value = headers.get(name)
    if value is None:  # a plain dict from a test or another server: look it up ignoring case
        value = next((v for k, v in headers.items() if k.lower() == name.lower()), None)
    if value is None or not str(value).strip():
        raise DeliveryRefused(400, "missing_header", f"the {name} header is missing")
    return str(value).strip()


def read_delivery(
    headers: Mapping[str, str], body: bytes, secret: str, *, now: float, max_age: int = MAX_AGE_SECONDS
) -> Delivery:
    """The verified delivery, or :class:`DeliveryRefused` (see the module's docstring for the checks, in order)."""
    signature = _header(headers, SIGNATURE_HEADER)
    timestamp = _header(headers, TIMESTAMP_HEADER)
    event_id = _header(headers, EVENT_ID_HEADER)
    if not _TIMESTAMP.fullmatch(timestamp):
        raise DeliveryRefused(400, "malformed_timestamp", f"{TIMESTAMP_HEADER} is not a UNIX time in seconds")
    if not _EVENT_ID.fullmatch(event_id):
        raise DeliveryRefused(400, "malformed_event_id", f"{EVENT_ID_HEADER} is not an event id")
    if len(body) > MAX_BODY_BYTES:
        raise DeliveryRefused(413, "too_large", f"a delivery of more than {MAX_BODY_BYTES} bytes")
    if abs(now - int(timestamp)) > max_age:
        raise DeliveryRefused(400, "stale", f"the delivery was signed more than {max_age} s from now")
    if not secret or not signature_matches(secret, timestamp, body, signature):
        raise DeliveryRefused(403, "bad_signature", "the signature is not this workspace's")
    try:
        event = json.loads(body)
    except (ValueError, RecursionError):
        raise DeliveryRefused(400, "malformed_body", "the body is not JSON") from None
    if not isinstance(event, dict):
        raise DeliveryRefused(400, "malformed_body", "the body is not a JSON object")
    event_type, resource_id = event.get("event_type"), event.get("resource_id")
    if not isinstance(event_type, str) or not isinstance(resource_id, str) or not _RESOURCE_ID.fullmatch(resource_id):
        raise DeliveryRefused(400, "malformed_body", "the body has no event_type and resource_id")
    return Delivery(
        event_id=event_id,
        event_type=event_type[:100],
        resource_id=resource_id,
        timestamp=int(timestamp),
        signature_digest=hashlib.sha256(signature.encode("utf-8", "replace")).hexdigest(),
    )

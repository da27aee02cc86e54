"""Prolific's webhook deliveries: their signature checked, their headers and body read. Pure (no Django).

As Prolific's reference says (docs/prolific.md, "Webhooks"): the signature, base64 of the HMAC-SHA256
of timestamp + body, is compared *as text*, so another spelling of the same bytes does not verify; the
timestamp is "a UNIX timestamp" (whole or fractional seconds) and no more, signed as received.
:func:`read_delivery` refuses before anything is stored (a stale timestamp too: no replay later); an
event type not subscribed to is refused, Prolific listing none. The :class:`Delivery` keeps only what
says which resource to re-read (and a high return rate's ``metadata``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

SIGNATURE_HEADER = "X-Prolific-Request-Signature"
TIMESTAMP_HEADER = "X-Prolific-Request-Timestamp"
EVENT_ID_HEADER = "X-Event-ID"
#: A delivery signed longer ago than this (seconds), or this far in the future, is refused.
MAX_AGE_SECONDS = 300
#: Prolific's events are a few hundred bytes; anything much larger is not one.
MAX_BODY_BYTES = 64 * 1024
#: The events the platform subscribes to: the only ones a delivery may carry (any other is refused).
SUBMISSION_STATUS = "submission.status.change"
STUDY_STATUS = "study.status.change"
STUDY_PROGRESS = "study.progress.change"
HIGH_RETURN_RATE = "study.has_high_return_rate"
EVENT_TYPES = (SUBMISSION_STATUS, STUDY_STATUS, STUDY_PROGRESS, HIGH_RETURN_RATE)
#: The events about a study (their resource id is the study's id); the others are about a submission.
STUDY_EVENTS = (STUDY_STATUS, STUDY_PROGRESS, HIGH_RETURN_RATE)
#: A high-return-rate event's metadata is kept for the researcher up to this size (JSON characters).
MAX_METADATA_CHARS = 2000
_EVENT_ID = re.compile(r"[A-Za-z0-9._:-]{1,100}")
_RESOURCE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
#: A UNIX time in seconds, whole or with a fractional part (see the module's docstring).
_TIMESTAMP = re.compile(r"[0-9]{1,12}(?:\.[0-9]{1,20})?")


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
    #: Seconds since the epoch, as signed (a fractional part kept).
    timestamp: float
    #: SHA-256 (hex) of the signature's decoded bytes (recorded with the event; not unique: events alike in one second share it).
    signature_digest: str
    #: A high-return-rate event's ``metadata`` (empty for the other events).
    metadata: dict = field(default_factory=dict)


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The signature Prolific sends: base64(HMAC-SHA256(secret, timestamp + body))."""
    digest = hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


def signature_matches(secret: str, timestamp: str, body: bytes, signature: str) -> bool:
    """Whether ``signature`` is the secret's over ``timestamp`` and ``body``: the base64 texts compared in
    constant time, as the reference's example does (another spelling of the same bytes does not match)."""
    try:
        given = signature.encode("ascii")
    except UnicodeEncodeError:
        return False
    return hmac.compare_digest(sign(secret, timestamp, body).encode("ascii"), given)


def signature_digest(signature: str) -> str:
    """What is recorded of a signature: SHA-256 (hex) of a verified signature's decoded bytes (one key per signed
    request, whatever else could spell it)."""
    return hashlib.sha256(base64.b64decode(signature.encode("ascii"), validate=True)).hexdigest()


def parse_timestamp(text: str) -> float:
    """``X-Prolific-Request-Timestamp`` as seconds since the epoch: a UNIX time, whole or fractional;
    :class:`DeliveryRefused` (400) for anything else (see the module's docstring)."""
    if not _TIMESTAMP.fullmatch(text):
        raise DeliveryRefused(400, "malformed_timestamp", f"{TIMESTAMP_HEADER} is not a UNIX time in seconds")
    return float(text)


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
    seconds = parse_timestamp(timestamp)
    if not _EVENT_ID.fullmatch(event_id):
        raise DeliveryRefused(400, "malformed_event_id", f"{EVENT_ID_HEADER} is not an event id")
    if len(body) > MAX_BODY_BYTES:
        raise DeliveryRefused(413, "too_large", f"a delivery of more than {MAX_BODY_BYTES} bytes")
    if abs(now - seconds) > max_age:
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
    if event_type not in EVENT_TYPES:
        raise DeliveryRefused(400, "unknown_event_type", f"event_type is not one of {', '.join(EVENT_TYPES)}")
    return Delivery(
        event_id=event_id,
        event_type=event_type,
        resource_id=resource_id,
        timestamp=seconds,
        signature_digest=signature_digest(signature),
        metadata=_metadata(event) if event_type == HIGH_RETURN_RATE else {},
    )


def _metadata(event: dict) -> dict:
    """The event's ``metadata`` object when it is one and small enough to show; else nothing."""
    metadata = event.get("metadata")
    if not isinstance(metadata, dict):
        return {}
    try:
        written = json.dumps(metadata)
    except (TypeError, ValueError, RecursionError):
        return {}
    return metadata if len(written) <= MAX_METADATA_CHARS else {}

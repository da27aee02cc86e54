"""What Amazon Mechanical Turk's errors mean: :class:`MTurkError`, the one exception type of :mod:`.client`,
with a message fit to show a user (a :class:`core.errors.ProviderError`, so a ``ServiceError``; ``upstream``
when MTurk failed rather than refused), and the answers that are a create's own earlier success
(:func:`is_duplicate_request`, :func:`existing_hit_id`: a retried create that meets it creates nothing).
Pure Python (no Django import).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from botocore.exceptions import ClientError, EndpointConnectionError, HTTPClientError, NoCredentialsError
from botocore.exceptions import ConnectionError as BotoConnectionError

from core.errors import ProviderError

HIT_ALREADY_EXISTS = "AWS.MechanicalTurk.HitAlreadyExists"


class MTurkError(ProviderError):
    """A failed MTurk request, with a message fit to show a user: ``operation`` (e.g. ``"ApproveAssignment"``),
    botocore's ``code``, MTurk's ``turk_code``, the server's ``detail`` and HTTP ``status``; ``upstream``
    (MTurk failed rather than refused) is worked out from ``code`` and ``status`` unless given."""

    def __init__(
        self,
        message: str,
        *,
        operation: str = "",
        code: str = "",
        turk_code: str = "",
        detail: str = "",
        status: int | None = None,
        upstream: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.operation = operation
        self.code = code
        self.turk_code = turk_code
        self.detail = detail
        self.status = status
        self.upstream = upstream if upstream is not None else (code in _UPSTREAM_CODES or (status or 0) >= 500)

    def reworded(self, message: str) -> MTurkError:
        """The same refusal with a message that says more (its codes and detail kept)."""
        return MTurkError(
            message, operation=self.operation, code=self.code, turk_code=self.turk_code, detail=self.detail
        )

    @classmethod
    def from_botocore(cls, exc: Exception, operation: str) -> MTurkError:
        if isinstance(exc, ClientError):
            code, turk_code, detail = _error_parts(exc)
            shown = turk_code or code or "error"
            status = (exc.response or {}).get("ResponseMetadata", {}).get("HTTPStatusCode")
            message = f"MTurk refused {operation}: {detail or 'no message'} [{shown}]"
            if code in _THROTTLING_CODES:
                message += " (still throttled after botocore's retries; lower the call rate or try again later)"
            return cls(message, operation=operation, code=code, turk_code=turk_code, detail=detail, status=status)
        if isinstance(exc, NoCredentialsError):
            message = (
                f"MTurk {operation} needs AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
                "(or AWS_PROFILE) for the requester account"
            )
            return cls(message, operation=operation, code="NoCredentials")
        if isinstance(exc, EndpointConnectionError):
            return cls(f"could not reach MTurk for {operation}: {exc}", operation=operation, code="Connection")
        # A timeout or a dropped connection is MTurk not answering; anything else happened here.
        lost = isinstance(exc, (BotoConnectionError, HTTPClientError))
        return cls(f"MTurk {operation} failed: {exc}", operation=operation, code=type(exc).__name__, upstream=lost)


_THROTTLING_CODES = {"ThrottlingException", "Throttling", "TooManyRequestsException", "RequestLimitExceeded"}
#: Codes of MTurk failing rather than refusing (``Connection``: it could not be reached).
_UPSTREAM_CODES = {"ServiceFault", "ServiceUnavailable", "InternalError", "InternalFailure", "Connection"}
_UPSTREAM_CODES |= _THROTTLING_CODES


def _error_parts(exc: ClientError) -> tuple[str, str, str]:
    """(code, TurkErrorCode, message) from however botocore surfaced the error: the Turk code at the top
    of ``exc.response`` (botocore), inside ``Error`` or as the code itself (other servers)."""
    response = exc.response or {}
    error = response.get("Error") or {}
    code = str(error.get("Code") or "")
    turk_code = str(response.get("TurkErrorCode") or error.get("TurkErrorCode") or "")
    if not turk_code and code.startswith("AWS.MechanicalTurk."):
        turk_code = code
    detail = str(error.get("Message") or response.get("Message") or "")
    return code, turk_code, detail


def is_duplicate_request(error: MTurkError, token: str | None = None) -> bool:
    """True when MTurk says this very request (same idempotency token) was already done ("The idempotency
    token ... has already been processed", or a TurkErrorCode naming a duplicate)."""
    turk = error.turk_code.lower()
    if any(word in turk for word in ("alreadyexists", "duplicate", "alreadyprocessed")):
        return True
    message = error.detail.lower()
    if "has already been processed" in message:
        return token is None or token.lower() in message or "idempotency token" not in message
    return False


_ID = re.compile(r"(?<![A-Za-z0-9])[A-Z0-9]{30}(?![A-Za-z0-9])")
_LABELLED_ID = re.compile(r"(?i:\bHIT\s*Id\b)\s*[:=]?\s*[\"']?([A-Z0-9]{10,64})(?![A-Za-z0-9])")


def existing_hit_id(message: str, *, exclude: Iterable[str]) -> str | None:
    """The HIT id in a HitAlreadyExists message (MTurk documents only that it *contains* it), if exactly one
    can be told apart from ``exclude`` (the HIT type id, the token); a labelled ``HITId:`` wins."""
    excluded = {value for value in exclude if value}
    labelled = {m for m in _LABELLED_ID.findall(message) if m not in excluded}
    if len(labelled) == 1:
        return labelled.pop()
    candidates = {m for m in _ID.findall(message) if m not in excluded}
    return candidates.pop() if len(candidates) == 1 else None

"""A small client layer for Amazon Mechanical Turk (or any server speaking its API); pure (no Django).

What it adds to a bare boto3 client: botocore's ``standard`` retries, under which a retried create may
meet its own earlier success (``HitAlreadyExists``, "idempotency token ... already processed"): a
success here, never a reason to create again; a client-side rate limit, so a large batch is not
throttled; idempotent review (approving an approved assignment returns ``False``), so an interrupted
sync simply runs again; one exception type, :class:`~platforms.mturk.errors.MTurkError`.
"""

from __future__ import annotations

import datetime as dt
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal, InvalidOperation
from typing import Any

import boto3
import botocore.session
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from platforms.mturk.errors import HIT_ALREADY_EXISTS, MTurkError, existing_hit_id, is_duplicate_request

REGION = "us-east-1"
SANDBOX_ENDPOINT = "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
LIVE_ENDPOINT = "https://mturk-requester.us-east-1.amazonaws.com"
SANDBOX_SUBMIT_URL = "https://workersandbox.mturk.com/mturk/externalSubmit"
LIVE_SUBMIT_URL = "https://www.mturk.com/mturk/externalSubmit"

# System qualification types (the same ids in the sandbox and in production, except Masters).
LOCALE_QUALIFICATION = "00000000000000000071"
PERCENT_APPROVED_QUALIFICATION = "000000000000000000L0"
NUMBER_APPROVED_QUALIFICATION = "00000000000000000040"
MASTERS_QUALIFICATION_LIVE = "2F1QJWKUDD8XADTFD2Q0G6UTO95ALH"
MASTERS_QUALIFICATION_SANDBOX = "2ARFPLSP75KLA8M8DH1HTEQVJT3SY6"

ASSIGNMENT_STATUSES = ("Submitted", "Approved", "Rejected")

#: Any moment in the past: UpdateExpirationForHIT then expires the HIT at once.
_PAST = dt.datetime(2015, 1, 1, tzinfo=dt.UTC)
_CENT = Decimal("0.01")


def make_client(endpoint_url: str | None = None, live: bool = False, max_attempts: int = 8):
    """A boto3 MTurk client: ``endpoint_url`` if given, else the sandbox (nothing costs money by accident)
    unless ``live``. ``max_attempts`` counts botocore's retries *after* the first request."""
    endpoint = endpoint_url or (LIVE_ENDPOINT if live else SANDBOX_ENDPOINT)
    config = Config(
        region_name=REGION,
        retries={"mode": "standard", "max_attempts": max_attempts},
        connect_timeout=10,
        read_timeout=60,
    )
    return _session().client("mturk", endpoint_url=endpoint, region_name=REGION, config=config)


#: botocore's reader of its own data files, shared by every session (docs/benchmarks.md, "The MTurk client's set-up").
_DATA_LOADER = None


def _session() -> boto3.session.Session:
    """A new session (credentials read from boto3's chain at each call) on the one shared data loader."""
    global _DATA_LOADER
    core = botocore.session.get_session()
    if _DATA_LOADER is None:
        _DATA_LOADER = core.get_component("data_loader")
    else:
        core.register_component("data_loader", _DATA_LOADER)
    session = boto3.session.Session(botocore_session=core)
    paths = _DATA_LOADER.search_paths  # boto3 adds its data folder to the loader at every session
    paths[:] = list(dict.fromkeys(paths))
    return session


def submit_url(endpoint_url: str | None = None, live: bool = False, override: str | None = None) -> str:
    """Where the HIT page's form posts its answers: ``override``, else AWS's worker site of the same world
    (sandbox or live), else ``<endpoint>/mturk/externalSubmit`` of an MTurk-compatible server."""
    if override:
        return override
    endpoint = (endpoint_url or "").rstrip("/")
    if not endpoint:
        return LIVE_SUBMIT_URL if live else SANDBOX_SUBMIT_URL
    if endpoint == SANDBOX_ENDPOINT:
        return SANDBOX_SUBMIT_URL
    if endpoint == LIVE_ENDPOINT:
        return LIVE_SUBMIT_URL
    return f"{endpoint}/mturk/externalSubmit"


def qualification_requirements(
    *,
    live: bool,
    locales: list[str] | None = None,
    min_approval_rate: int | None = None,
    min_approved_hits: int | None = None,
    masters: bool = False,
) -> list[dict]:
    """QualificationRequirements for CreateHITType; ``locales``: ISO 3166 codes (``"US"``, ``"US-NY"``);
    ``live``: Masters has another id in the sandbox."""
    requirements: list[dict] = []
    if locales:
        requirements.append(_requirement(LOCALE_QUALIFICATION, "In", LocaleValues=[_locale(v) for v in locales]))
    if min_approval_rate is not None:
        if not 0 <= int(min_approval_rate) <= 100:
            raise ValueError(f"min_approval_rate must be a percentage (0-100), not {min_approval_rate!r}")
        requirements.append(_at_least(PERCENT_APPROVED_QUALIFICATION, int(min_approval_rate)))
    if min_approved_hits is not None:
        if int(min_approved_hits) < 0:
            raise ValueError(f"min_approved_hits cannot be negative ({min_approved_hits!r})")
        requirements.append(_at_least(NUMBER_APPROVED_QUALIFICATION, int(min_approved_hits)))
    if masters:
        requirements.append(
            _requirement(MASTERS_QUALIFICATION_LIVE if live else MASTERS_QUALIFICATION_SANDBOX, "Exists")
        )
    return requirements


def _requirement(type_id: str, comparator: str, **values: list) -> dict:
    return {"QualificationTypeId": type_id, "Comparator": comparator, **values, "ActionsGuarded": "Accept"}


def _at_least(type_id: str, value: int) -> dict:
    return _requirement(type_id, "GreaterThanOrEqualTo", IntegerValues=[value])


def _locale(value: str) -> dict[str, str]:
    match = re.fullmatch(r"([A-Za-z]{2})(?:-([A-Za-z0-9]{1,3}))?", value.strip())
    if not match:
        raise ValueError(f"locale {value!r} is not an ISO 3166 country code like 'US' or 'US-NY'")
    locale = {"Country": match[1].upper()}
    if match[2]:
        locale["Subdivision"] = match[2].upper()
    return locale


def _money(amount: Decimal | str | int, what: str) -> str:
    """MTurk wants amounts as strings with at most two decimals; refuse anything else."""
    try:
        value = Decimal(str(amount))
    except InvalidOperation:
        raise ValueError(f"{what} {amount!r} is not an amount of money") from None
    if not value.is_finite() or value < 0:
        raise ValueError(f"{what} must be a non-negative amount, not {amount!r}")
    if value != value.quantize(_CENT):
        raise ValueError(f"{what} {amount!r} has fractions of a cent; MTurk pays whole cents")
    return str(value.quantize(_CENT))


_FEEDBACK_LIMIT = 1024
_FEEDBACK_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _feedback(text: str) -> str:
    """RequesterFeedback as MTurk accepts it (1024 characters, no control characters): cleaned and
    shortened rather than letting one long gold-failure message fail the review."""
    text = _FEEDBACK_FORBIDDEN.sub(" ", text)
    return text if len(text) <= _FEEDBACK_LIMIT else text[: _FEEDBACK_LIMIT - 1] + "…"


class RateLimiter:
    """Spaces calls at least ``1 / max_calls_per_second`` apart (thread-safe)."""

    def __init__(
        self,
        max_calls_per_second: float | None,
        *,
        sleep: Callable[[float], Any] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_calls_per_second is not None and max_calls_per_second < 0:
            raise ValueError("max_calls_per_second cannot be negative")
        self.interval = 1.0 / max_calls_per_second if max_calls_per_second else 0.0
        self._sleep = sleep
        self._clock = clock
        self._next: float | None = None
        self._lock = threading.Lock()

    def wait(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = self._clock()
            if self._next is not None and now < self._next:
                self._sleep(self._next - now)
                now = self._next
            self._next = now + self.interval


class MTurk:
    """The requester operations this project needs, rate-limited; botocore failures become :class:`MTurkError`."""

    def __init__(
        self,
        client,
        *,
        max_calls_per_second: float | None = 5.0,
        sleep: Callable[[float], Any] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.limiter = RateLimiter(max_calls_per_second, sleep=sleep, clock=clock)

    def _call(self, method: str, **params: Any) -> dict:
        self.limiter.wait()
        operation = self.client.meta.method_to_api_mapping.get(method, method)
        try:
            return getattr(self.client, method)(**params)
        except (ClientError, BotoCoreError) as exc:
            raise MTurkError.from_botocore(exc, operation) from exc

    # -- account ---------------------------------------------------------------------

    def account_balance(self) -> Decimal:
        """The requester's available balance in USD (the sandbox always says 10000.00)."""
        return Decimal(self._call("get_account_balance")["AvailableBalance"])

    # -- HITs ------------------------------------------------------------------------

    def create_hit_type(
        self,
        *,
        title: str,
        description: str,
        keywords: str | Iterable[str],
        reward: Decimal,
        assignment_duration_seconds: int,
        auto_approval_delay_seconds: int,
        qualification_requirements: list[dict],
    ) -> str:
        """Register (or find: MTurk returns the same id for the same settings) a HIT type."""
        if not isinstance(keywords, str):
            keywords = ", ".join(keywords)
        params: dict[str, Any] = {
            "Title": title,
            "Description": description,
            "Keywords": keywords,
            "Reward": _money(reward, "reward"),
            "AssignmentDurationInSeconds": int(assignment_duration_seconds),
            "AutoApprovalDelayInSeconds": int(auto_approval_delay_seconds),
        }
        if qualification_requirements:
            params["QualificationRequirements"] = list(qualification_requirements)
        return self._call("create_hit_type", **params)["HITTypeId"]

    def create_hit(
        self,
        *,
        hit_type_id: str,
        question: str,
        lifetime_seconds: int,
        max_assignments: int,
        unique_request_token: str,
        requester_annotation: str,
    ) -> str:
        """Create one HIT; safe to repeat with the same ``unique_request_token`` (for 24 h): the HIT made
        for it is returned, or :class:`MTurkError` when its id cannot be read (never a second HIT)."""
        try:
            response = self._call(
                "create_hit_with_hit_type",
                HITTypeId=hit_type_id,
                Question=question,
                LifetimeInSeconds=int(lifetime_seconds),
                MaxAssignments=int(max_assignments),
                UniqueRequestToken=unique_request_token,
                RequesterAnnotation=requester_annotation,
            )
        except MTurkError as error:
            already = error.turk_code.lower() == HIT_ALREADY_EXISTS.lower()
            if not (already or is_duplicate_request(error, unique_request_token)):
                raise
            hit_id = existing_hit_id(error.detail, exclude=(hit_type_id, unique_request_token))
            if hit_id is None:
                raise error.reworded(
                    f"MTurk already created a HIT for request token {unique_request_token!r}, but its id "
                    f"could not be read from the answer ({error.detail!r}). No second HIT was created; find "
                    f"the HIT by its annotation {requester_annotation!r} and record its id by hand."
                ) from error
            return hit_id
        return response["HIT"]["HITId"]

    def expire_hit(self, hit_id: str) -> None:
        """Stop offering a HIT now (workers who accepted it can still submit)."""
        self._update_expiration(hit_id, _PAST)

    def extend_hit(self, hit_id: str, expire_at: dt.datetime) -> None:
        """Offer a HIT until ``expire_at`` (timezone-aware; also re-opens an expired HIT)."""
        if expire_at.tzinfo is None or expire_at.utcoffset() is None:
            raise ValueError("expire_at must be timezone-aware (a naive time would be read as UTC)")
        self._update_expiration(hit_id, expire_at)

    def _update_expiration(self, hit_id: str, expire_at: dt.datetime) -> None:
        # A retried update can meet its own success ("idempotency token ... already processed").
        try:
            self._call("update_expiration_for_hit", HITId=hit_id, ExpireAt=expire_at)
        except MTurkError as error:
            if not ("has already been processed" in error.detail.lower() and hit_id in error.detail):
                raise

    def add_assignments(self, hit_id: str, count: int, unique_request_token: str) -> None:
        """Ask ``count`` more workers; a repeat with the same token is a success, not a second extension."""
        self._call_once(
            "create_additional_assignments_for_hit",
            HITId=hit_id,
            NumberOfAdditionalAssignments=int(count),
            UniqueRequestToken=unique_request_token,
        )

    def _call_once(self, method: str, **params: Any) -> None:
        """A call with a ``UniqueRequestToken``: MTurk's "already done" for that token is a success."""
        try:
            self._call(method, **params)
        except MTurkError as error:
            if not is_duplicate_request(error, params["UniqueRequestToken"]):
                raise

    def iter_hits(self) -> Iterator[dict]:
        """Every HIT of the requester (ListHITs)."""
        return self._pages("list_hits", "HITs", "HITs", {})

    def _pages(self, method: str, key: str, what: str, params: dict[str, Any]) -> Iterator[dict]:
        """Every item of a listing: pages may be short and still have a NextToken, so only a missing token
        ends it; a token the server already gave is an error, not a loop."""
        params = {**params, "MaxResults": 100}
        seen: set[str] = set()
        while True:
            page = self._call(method, **params)
            yield from page.get(key, [])
            token = page.get("NextToken")
            if not token:
                return
            if token in seen:
                operation = self.client.meta.method_to_api_mapping.get(method, method)
                raise MTurkError(f"MTurk repeated a NextToken while listing {what}", operation=operation, upstream=True)
            seen.add(token)
            params["NextToken"] = token

    def find_hit(self, *, requester_annotation: str, hit_type_id: str | None = None) -> str | None:
        """The id of the HIT created with ``requester_annotation`` (and HIT type), or ``None``: MTurk forgets
        a UniqueRequestToken after 24 hours, after which only a lookup tells whether to create it again."""
        for hit in self.iter_hits():
            if hit.get("RequesterAnnotation") == requester_annotation and (
                hit_type_id is None or hit.get("HITTypeId") == hit_type_id
            ):
                return hit["HITId"]
        return None

    # -- assignments -----------------------------------------------------------------

    def iter_assignments(self, hit_id: str, statuses: Iterable[str] = ASSIGNMENT_STATUSES) -> Iterator[dict]:
        """Every assignment of a HIT in ``statuses``."""
        params = {"HITId": hit_id, "AssignmentStatuses": list(statuses)}
        return self._pages("list_assignments_for_hit", "Assignments", f"assignments of HIT {hit_id}", params)

    def approve(self, assignment_id: str, feedback: str | None = None) -> bool:
        """Approve (and pay) a submitted assignment; ``False`` if it was already approved."""
        params: dict[str, Any] = {"AssignmentId": assignment_id}
        if feedback:
            params["RequesterFeedback"] = _feedback(feedback)
        return self._review("approve_assignment", params, done_status="Approved")

    def reject(self, assignment_id: str, feedback: str) -> bool:
        """Reject a submitted assignment (workers see ``feedback``); ``False`` if already rejected."""
        if not feedback or not feedback.strip():
            raise ValueError("MTurk requires feedback to reject an assignment, and workers deserve a reason")
        params = {"AssignmentId": assignment_id, "RequesterFeedback": _feedback(feedback)}
        return self._review("reject_assignment", params, done_status="Rejected")

    def _review(self, method: str, params: dict[str, Any], *, done_status: str) -> bool:
        """Approve or reject, tolerating only "it already is": MTurk's "can be called with a status of:
        Submitted" does not say the status (approved, rejected, or not visible yet), so it is looked up."""
        try:
            self._call(method, **params)
        except MTurkError as error:
            if "can be called with a status of" not in error.detail.lower():
                raise
            status = self._assignment_status(params["AssignmentId"])
            if status != done_status:
                raise error.reworded(
                    f"{error} (the assignment is {status or 'in an unknown state'}, not {done_status})"
                ) from error
            return False
        return True

    def _assignment_status(self, assignment_id: str) -> str | None:
        try:
            return self._call("get_assignment", AssignmentId=assignment_id)["Assignment"].get("AssignmentStatus")
        except MTurkError:
            return None

    # -- workers ---------------------------------------------------------------------

    def send_bonus(
        self, *, worker_id: str, assignment_id: str, amount: Decimal, reason: str, unique_request_token: str
    ) -> None:
        """Pay a bonus once: a repeat with the same token is a success, not a second payment."""
        self._call_once(
            "send_bonus",
            WorkerId=worker_id,
            AssignmentId=assignment_id,
            BonusAmount=_money(amount, "bonus"),
            Reason=reason,
            UniqueRequestToken=unique_request_token,
        )

    def block_worker(self, worker_id: str, reason: str) -> None:
        """Keep a worker from all of this requester's HITs (MTurk shows them ``reason``)."""
        self._call("create_worker_block", WorkerId=worker_id, Reason=reason)

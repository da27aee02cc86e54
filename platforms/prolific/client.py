"""A small client for Prolific's public REST API (v1): no maintained Python client exists.

Calls go through :class:`core.http.JsonClient` (``pace``: a rate all the site's processes share). Only
calls safe to repeat are retried blindly; creating a study, transitioning it and paying a bulk bonus are
not (no request token): they raise :class:`ProlificUnknownOutcome` after a lost answer, and the services
record the intent first and look the result up before a second attempt.

Not confirmed by the reference, so handled defensively: list pages' shape; studies found by
``internal_name`` by listing; a second ``pay`` of a bulk bonus (never sent); amounts go in the account's
currency (cents), assumed USD like the batch's reward.
"""

from __future__ import annotations

import datetime as dt
import json
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import KW_ONLY, dataclass
from decimal import Decimal
from typing import Any

from core.errors import ProviderError
from core.http import HttpError, JsonClient, Transport, list_pages

#: Documented rejection categories of ``POST /submissions/{id}/transition/``.
REJECTION_CATEGORIES = frozenset(
    {
        "TOO_QUICKLY",
        "TOO_SLOWLY",
        "FAILED_INSTRUCTIONS",
        "INCOMP_LONGITUDINAL",
        "FAILED_CHECK",
        "LOW_EFFORT",
        "MALINGERING",
        "NO_CODE",
        "BAD_CODE",
        "NO_DATA",
        "UNSUPP_DEVICE",
        "OTHER",
    }
)
#: Prolific refuses rejection messages shorter than this.
MIN_REJECTION_MESSAGE = 100
DEVICES = ("desktop", "tablet", "mobile")
PAGE_SIZE = 200
#: Seconds one call may take in all, retries and back-off included (``timeout`` bounds each attempt).
CALL_DEADLINE = 120.0
#: The largest answer read (a page of 200 submissions is far below it).
MAX_RESPONSE_BYTES = 10 * 1024 * 1024


class ProlificError(ProviderError):
    """Prolific answered with an error (4xx other than 429), or kept failing; ``upstream`` when Prolific
    failed rather than refused (a 5xx, a 429 past the retries, or no answer)."""

    def __init__(
        self, message: str, status: int | None = None, *, upstream: bool | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.upstream = upstream if upstream is not None else (status is not None and (status >= 500 or status == 429))
        #: The seconds Prolific's last answer asked to wait before asking again (``Retry-After``), if it did.
        self.retry_after = retry_after


class ProlificUnknownOutcome(ProlificError):
    """A call that is not safe to repeat lost its answer: it may or may not have happened (a failure of Prolific)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message, status, upstream=True)


@dataclass(frozen=True)
class Submission:
    """One participant's session of a study (its id is the ``SESSION_ID`` of the study URL)."""

    id: str
    participant_id: str
    status: str
    started_at: str | None = None
    completed_at: str | None = None
    study_id: str = ""

    @classmethod
    def from_api(cls, item: dict) -> Submission:
        """From a list page or ``GET /submissions/{id}/``; another shape is a :class:`ProlificError`."""
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise ProlificError("Prolific answered a submission without an id", 502)
        return cls(
            id=item["id"],
            participant_id=item.get("participant_id") or item.get("participant") or "",
            status=item.get("status", ""),
            started_at=item.get("started_at"),
            completed_at=item.get("completed_at"),
            study_id=item.get("study_id") or "",
        )


def moment(text: object) -> dt.datetime | None:
    """A time as Prolific writes it (ISO 8601); ``None`` for none or anything else."""
    try:
        return dt.datetime.fromisoformat(text) if isinstance(text, str) and text else None
    except ValueError:
        return None


def cents(amount: Decimal) -> int:
    """Dollars as whole cents (Prolific takes rewards and bonuses in the account currency's minor unit)."""
    value = Decimal(amount) * 100
    if value != value.to_integral_value():
        raise ValueError(f"{amount} is not a whole number of cents")
    return int(value)


@dataclass(eq=False)
class Prolific(Transport):
    """Prolific's API at ``base_url`` with ``token``; ``sleep`` is injectable so back-off is testable."""

    base_url: str
    token: str
    _: KW_ONLY
    deadline: float = CALL_DEADLINE
    max_bytes: int = MAX_RESPONSE_BYTES

    def __post_init__(self) -> None:
        if not self.token:
            raise ProlificError(
                "PROLIFIC_API_TOKEN is not set (in the environment or on the Connections page): create a token in "
                "Prolific's settings (API tokens)"
            )
        self.base_url = self.base_url.rstrip("/") + "/"

    # -- transport --------------------------------------------------------------------
    def transport(self) -> JsonClient:
        """The shared client (:class:`core.http.JsonClient`) with this client's settings as they are now."""
        return JsonClient(self.base_url, {"Authorization": f"Token {self.token}"}, **self.transport_settings())

    def request(self, method: str, path: str, body: Any = None, *, repeatable: bool = True) -> Any:
        """Send one call; every failure is a :class:`ProlificError`. Not ``repeatable``: retried only on 429
        and 503 with Retry-After; a 5xx, a lost or unreadable answer is :class:`ProlificUnknownOutcome`."""
        return self._send(method, path, body, repeatable)[0]

    def _send(self, method: str, path: str, body: Any, repeatable: bool) -> tuple[Any, dict]:
        """:meth:`request`'s answer and the answer's headers."""
        try:
            transport = self.transport()
        except ValueError as exc:
            raise ProlificError(f"PROLIFIC_API_URL: {exc}") from None
        try:
            answer = transport.request(method, path, body, repeatable=repeatable)
        except HttpError as exc:
            raise _prolific_error(method, path, exc) from None
        return ({} if answer is None else answer), transport.last_headers

    def pages(self, path: str) -> Iterator[dict]:
        """Every item of a list endpoint (:func:`core.http.list_pages`: ``_links.next``, else offsets)."""
        return list_pages(
            lambda url: self.request("GET", url),
            path,
            PAGE_SIZE,
            lambda: ProlificError(f"Prolific GET {path}: a list page that is not a list of objects", 502),
        )

    # -- studies ------------------------------------------------------------------------
    def create_study(self, fields: dict) -> dict:
        """``POST /studies/``: a draft study. Not repeatable: a lost answer means "look it up"."""
        return self.request("POST", "studies/", fields, repeatable=False)

    def find_study(self, project_id: str, internal_name: str) -> dict | None:
        """The project's study with this internal name (how a study is found again), or ``None``."""
        return named(self.pages(f"projects/{project_id}/studies/"), internal_name, key="internal_name")

    def get_study(self, study_id: str) -> dict:
        return self.request("GET", f"studies/{study_id}/")

    def transition_study(self, study_id: str, action: str) -> dict:
        """``PUBLISH``, ``PAUSE``, ``START`` or ``STOP``; callers check the status first, and again
        after a lost answer (Prolific refuses a transition that was already made)."""
        return self.request("POST", f"studies/{study_id}/transition/", {"action": action}, repeatable=False)

    def set_places(self, study_id: str, total_available_places: int) -> dict:
        """Set the study's place count (absolute, so repeating it is harmless)."""
        return self.request("PATCH", f"studies/{study_id}/", {"total_available_places": total_available_places})

    def study_cost(self, reward: Decimal, places: int) -> Decimal:
        """Prolific's own price (fees and VAT included) of ``places`` at ``reward`` dollars each."""
        answer = self.request(
            "POST", "study-cost-calculator/", {"reward": cents(reward), "total_available_places": places}
        )
        try:
            return Decimal(str(answer["total_cost"])) / 100
        except (KeyError, TypeError, ArithmeticError):
            raise ProlificError("Prolific's cost calculator answered without a total_cost", 502) from None

    # -- submissions --------------------------------------------------------------------
    def submissions(self, study_id: str) -> Iterator[Submission]:
        for item in self.pages(f"studies/{study_id}/submissions/"):
            yield Submission.from_api(item)

    def get_submission(self, submission_id: str) -> Submission | None:
        """Whose session this is, in which study (``None``: unknown): the arrival's check, as anyone can type
        the study URL's id."""
        item = _unless_gone(lambda: self.request("GET", f"submissions/{quote_id(submission_id)}/"))
        return None if item is None else Submission.from_api(item)

    def approve(self, submission_id: str) -> dict:
        return self.request("POST", f"submissions/{submission_id}/transition/", {"action": "APPROVE"})

    def reject(self, submission_id: str, category: str, message: str) -> dict:
        if category not in REJECTION_CATEGORIES:
            raise ValueError(f"unknown rejection category {category!r}")
        if len(message) < MIN_REJECTION_MESSAGE:
            raise ValueError(f"a rejection message needs at least {MIN_REJECTION_MESSAGE} characters")
        return self.request(
            "POST",
            f"submissions/{submission_id}/transition/",
            {"action": "REJECT", "rejection_category": category, "message": message},
        )

    # -- bonuses ------------------------------------------------------------------------
    def set_up_bonuses(self, study_id: str, amounts: dict[str, Decimal]) -> str:
        """Prepare (not pay, so repeatable) bonuses, participant id -> dollars; the bulk payment id."""
        csv = "".join(f"{pid},{Decimal(amount):.2f}\n" for pid, amount in sorted(amounts.items()))
        answer = self.request("POST", "submissions/bonus-payments/", {"study_id": study_id, "csv_bonuses": csv})
        if not isinstance(answer, dict) or not isinstance(answer.get("id"), str):
            raise ProlificError("Prolific set up bonuses without answering their id", 502)
        return answer["id"]

    def pay_bonuses(self, bulk_id: str) -> None:
        """Pay a bulk bonus. Documented as not idempotent: never sent twice for one id."""
        self.request("POST", f"bulk-bonus-payments/{bulk_id}/pay/", {}, repeatable=False)

    # -- participant groups -------------------------------------------------------------
    def find_group(self, workspace_id: str, name: str) -> dict | None:
        return named(self.pages(f"participant-groups/?workspace_id={urllib.parse.quote(workspace_id)}"), name)

    def create_group(self, workspace_id: str, name: str) -> dict:
        """A participant group of the workspace; callers look it up by name first (see ``find_group``)."""
        return self.request(
            "POST", "participant-groups/", {"workspace_id": workspace_id, "name": name}, repeatable=False
        )

    def add_to_group(self, group_id: str, participant_ids: list[str]) -> None:
        """Adding a participant who is already a member changes nothing, so this is repeatable."""
        if participant_ids:
            self.request(
                "POST", f"participant-groups/{group_id}/participants/", {"participant_ids": sorted(participant_ids)}
            )

    # -- webhooks: one secret per workspace (a new one replaces it); a subscription delivers once
    # confirmed with its creation's X-Hook-Secret. Creating either is not repeatable: callers list first.
    def hook_secrets(self, workspace_id: str) -> list[dict]:
        answer = self.request("GET", f"hooks/secrets/?workspace_id={urllib.parse.quote(workspace_id)}")
        items = answer.get("results", list(answer.values())) if isinstance(answer, dict) else answer
        return [s for s in items or [] if isinstance(s, dict) and isinstance(s.get("value"), str)]

    def create_hook_secret(self, workspace_id: str) -> dict:
        answer = self.request("POST", "hooks/secrets/", {"workspace_id": workspace_id}, repeatable=False)
        if not isinstance(answer, dict) or not isinstance(answer.get("value"), str):
            raise ProlificError("Prolific created a webhook secret without answering its value", 502)
        return answer

    def hook_subscriptions(self, workspace_id: str, *, enabled: bool = True) -> list[dict]:
        query = urllib.parse.urlencode({"workspace_id": workspace_id, "is_enabled": "true" if enabled else "false"})
        return [s for s in self.pages(f"hooks/subscriptions/?{query}") if isinstance(s.get("id"), str)]

    def all_hook_subscriptions(self, workspace_id: str) -> list[dict]:
        """Every subscription, once each, judged by its own ``is_enabled`` (else its list's), so nothing
        depends on how Prolific applies the filter. Listed never means *this site* confirmed it."""
        seen: dict[str, dict] = {}
        for enabled in (True, False):
            for subscription in self.hook_subscriptions(workspace_id, enabled=enabled):
                shown = subscription.get("is_enabled")
                seen.setdefault(
                    subscription["id"], {**subscription, "is_enabled": shown if isinstance(shown, bool) else enabled}
                )
        return list(seen.values())

    def create_hook_subscription(self, workspace_id: str, event_type: str, target_url: str) -> tuple[dict, str]:
        """(the subscription, its ``X-Hook-Secret``), from a ``results`` list or the subscription itself."""
        body = {"event_type": event_type, "target_url": target_url, "workspace_id": workspace_id}
        answer, headers = self._send("POST", "hooks/subscriptions/", body, repeatable=False)
        items = answer.get("results", [answer]) if isinstance(answer, dict) else []
        mine = [
            s
            for s in items
            if isinstance(s, dict)
            and isinstance(s.get("id"), str)
            and s.get("event_type", event_type) == event_type
            and s.get("target_url", target_url) == target_url
        ]
        hook_secret = headers.get("x-hook-secret", "")
        if not mine or not hook_secret:
            raise ProlificUnknownOutcome("Prolific POST hooks/subscriptions/: no subscription id or X-Hook-Secret")
        return mine[-1], hook_secret

    def confirm_hook_subscription(self, subscription_id: str, hook_secret: str) -> dict:
        """Start its deliveries (repeatable); an answer showing it not enabled is a :class:`ProlificError`."""
        path = f"hooks/subscriptions/{quote_id(subscription_id)}/"
        answer = self.request("POST", path, {"secret": hook_secret})
        if isinstance(answer, dict) and answer.get("is_enabled") is False:
            raise ProlificError(f"Prolific answered the confirmation of subscription {subscription_id} as not enabled")
        return answer

    def subscription_events(self, subscription_id: str, statuses: tuple[str, ...] = ()) -> Iterator[dict]:
        """The subscription's event log filtered by ``statuses``, read at growing offsets until an empty page
        (pages carry no link nor count, and a server may cap ``limit``)."""
        path = f"hooks/subscriptions/{quote_id(subscription_id)}/events/"
        query = {"status": json.dumps(list(statuses))} if statuses else {}
        offset = 0
        for _ in range(10_000):  # a bound on a server that never answers an empty page
            answer = self.request(
                "GET", f"{path}?{urllib.parse.urlencode({**query, 'limit': PAGE_SIZE, 'offset': offset})}"
            )
            results = answer.get("results") if isinstance(answer, dict) else None
            if not isinstance(results, list) or not all(isinstance(item, dict) for item in results):
                raise ProlificError(f"Prolific GET {path}: not a list of events", 502)
            if not results:
                return
            yield from results
            offset += len(results)

    # -- rehearsals with test participants -------------------------------------------------------
    def create_test_participant(self, email: str) -> dict:
        return self.request("POST", "researchers/participants/", {"email": email}, repeatable=False)

    def create_test_study(self, study_id: str) -> dict:
        """A test study made from the *draft* study, for the workspace's test participants."""
        return self.request("POST", f"studies/{quote_id(study_id)}/test-study", None, repeatable=False)

    def delete_hook_subscription(self, subscription_id: str) -> bool:
        path = f"hooks/subscriptions/{quote_id(subscription_id)}/"
        return _unless_gone(lambda: self.request("DELETE", path)) is not None

    def delete_group(self, group_id: str) -> bool:
        return _unless_gone(lambda: self.request("DELETE", f"participant-groups/{quote_id(group_id)}/")) is not None

    def submission_bonuses(self, submission_id: str) -> list[int]:
        """The bonuses (cents) Prolific shows on a submission: how a lost pay answer is reconciled (they
        may show minutes after the call)."""
        item = self.request("GET", f"submissions/{quote_id(submission_id)}/")
        found = item.get("bonus_payments") if isinstance(item, dict) else None
        if found is None:
            return []
        if not isinstance(found, list):
            raise ProlificError("Prolific answered a submission whose bonus_payments is not a list", 502)
        try:
            return [round(float(value)) for value in found]
        except (TypeError, ValueError):
            raise ProlificError("Prolific answered bonus_payments that are not amounts", 502) from None


def create_or_find(create: Callable[[], dict], find: Callable[[], dict | None]) -> dict:
    """``create()`` (a call not safe to repeat); after its answer was lost, what ``find()`` finds, else the loss."""
    try:
        return create()
    except ProlificUnknownOutcome:
        found = find()
        if found is None:
            raise
        return found


def quote_id(value: str) -> str:
    """An id as one segment of a path."""
    return urllib.parse.quote(str(value), safe="")


def named(items: Iterator[dict], name: str, *, key: str = "name") -> dict | None:
    """The first of ``items`` whose ``key`` is ``name`` (how a made resource is found again), or ``None``."""
    return next((item for item in items if item.get(key) == name), None)


def _unless_gone(call: Callable[[], Any]) -> Any:
    """``call``'s answer (never ``None``: :meth:`Prolific.request` answers ``{}`` for nothing); ``None`` on a
    404 (gone, or never there)."""
    try:
        return call()
    except ProlificError as exc:
        if exc.status == 404:
            return None
        raise


def _prolific_error(method: str, path: str, exc: HttpError) -> ProlificError:
    where = f"Prolific {method} {path}"
    if exc.unknown_outcome:
        return ProlificUnknownOutcome(f"{where}: {exc}; it may have been done", exc.status)
    if exc.kind == "refused":
        return ProlificError(f"{where}: HTTP {exc.status}: {_detail(exc.text)}", exc.status)
    return ProlificError(f"{where}: {exc}", exc.status, upstream=exc.upstream, retry_after=exc.retry_after)


def _detail(text: str) -> str:
    try:
        body = json.loads(text)
    except ValueError:
        return text[:300]
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return str(error.get("detail") or error.get("title") or error)[:300]
    return str(body)[:300]

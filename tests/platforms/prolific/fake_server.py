"""A small Prolific-compatible server on loopback, written from Prolific's API reference.

It lets the tests drive the product as it runs against Prolific: real HTTP, the
``Authorization: Token`` header, JSON bodies, paged lists with ``_links.next``. Only the
endpoints the product uses are implemented, with the rules the reference states (a
rejection needs a category and a message of 100 characters or more; returned, timed-out
and rejected submissions free their place; paying a bulk bonus twice pays twice).

Faults can be scripted per route name: ``throttle`` answers 429 with ``Retry-After: 0``,
``throttle:7`` with ``Retry-After: 7``, ``throttle_bare`` 429 without ``Retry-After``, ``error`` answers 502 without
doing anything, ``status:403`` answers that status (an error body) without doing anything,
``lose_response`` carries the request out and then drops the connection without an answer.
Hostile ones: ``slow:2.5`` answers (correctly) after 2.5 s, ``drip:1`` sends the headers at once and then the
body one byte a second, ``html`` answers 200 with an HTML page instead of JSON, ``garbled`` answers 200
with JSON of the wrong shape (a list where a status should be). ``faults`` are used up one per
call; ``standing`` holds a fault for every call of a route until it is removed (a 429 storm:
``fake.standing["get_submission"] = "throttle:30"``). Delays happen outside the server's lock, so a slow
answer holds only its own connection; ``hung_up`` records (``time.monotonic()``) each answer whose
client closed the connection before it was whole (how a test sees a client give up on a drip).
Random faults, as a busy Prolific deals them (``shares``: :class:`FaultShares`, drawn per API call
from a seeded generator, scripted faults first): a share of calls throttled (429 with
``Retry-After``), a share failed (502, nothing done), a share whose answer is lost (done, then the
connection dropped), every answer ``latency`` seconds late; ``dealt`` counts what was dealt and
``call_times`` records when each call came (``time.monotonic()``).

Webhooks: the hooks API (a secret per workspace, subscriptions confirmed with their
``X-Hook-Secret``) and a sender that POSTs each status change (and the study's progress change
that comes with a submission's, and a high return rate on demand), signed as Prolific signs it,
to the subscribed URL, with faults (``hook_faults``: drop, duplicate, forge, stale, delay, hold);
see "webhooks" below.

Ids are Prolific's shape, 24 lowercase hex characters (the site refuses others): the server
mints them so, and tests name participants and made-up sessions with :func:`hexid`.

Participants: :meth:`FakeProlific.start` gives a participant a place (``ACTIVE``) and the
study URL with the ``{{%PROLIFIC_PID%}}``-style placeholders filled in, as Prolific
does; the participant's browser (the test) then follows it to the site; a GET of
``/submissions/complete?cc=CODE`` (the completion URL) marks that participant's session
``AWAITING REVIEW`` when the code is the study's. ``GET /submissions/{id}/`` answers who
a session belongs to, which the site asks when a participant arrives. :meth:`FakeProlific.complete_with`
is a participant coming back with one of the study's ``completion_codes``, its actions carried out
(``REQUEST_RETURN``: asked to return the study, they do). A published study's places are only ever
raised (the reference: "Only increasing is allowed"), ``PAUSE``/``START`` stop and resume
recruiting, and ``place_log`` records every change of a study's places, status or taken places.

Participant groups (issue 32): listed per workspace (deleted ones left out), created,
members listed, added (members already there ignored), removed (non-members ignored),
deleted (a second delete answers 404). Bulk bonuses: set up only for participants who took
part in the study (else 400, as the reference says), answered with amount, fees (one fee for
the bulk, ``fee_rate`` of its total, rounded half-up to the cent) and total in cents; each pay of a bulk pays it again (the reference warns the call is not idempotent)
into the ledger ``payments`` (``paid`` sums it per participant), and ``GET
/submissions/{id}/`` shows a participant's bonuses (``bonus_payments``, cents) once
``pay_delay`` seconds have passed since each was paid (Prolific pays asynchronously).
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import hashlib
import hmac
import json
import queue
import random
import re
import secrets
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from http.server import BaseHTTPRequestHandler
from typing import ClassVar
from urllib.parse import parse_qs, urlencode, urlparse

from tests.loopback import LoopbackServer, send, serve_in_thread
from tests.platforms.prolific import contract

TOKEN = "test-token"
FREES_PLACE = {"RETURNED", "TIMED-OUT", "REJECTED"}


def _now() -> str:
    """Now, as Prolific writes a moment (ISO 8601, UTC, microseconds)."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _id() -> str:
    """A new id as Prolific's are: 24 lowercase hex characters."""
    return uuid.uuid4().hex[:24]


def _opened(gate: threading.Event) -> threading.Event:
    gate.set()
    return gate


def hexid(name: str) -> str:
    """A Prolific-shaped id (24 lowercase hex characters) that spells ``name`` (at most 12
    characters): tests name their participants and made-up sessions readably, and the site
    accepts only ids of Prolific's shape."""
    spelled = name.encode().hex()
    if len(spelled) > 24:
        raise ValueError(f"{name!r}: at most 12 characters")
    return spelled.ljust(24, "0")


@dataclass(frozen=True)
class FaultShares:
    """The shares of API calls a busy Prolific throttles (429, ``Retry-After: retry_after`` seconds),
    fails (502) or answers and loses (the work done, the answer dropped); each answer ``latency`` s late."""

    throttled: float = 0.0
    failed: float = 0.0
    lost: float = 0.0
    retry_after: int = 1
    latency: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if (
            min(self.throttled, self.failed, self.lost, self.latency) < 0
            or self.throttled + self.failed + self.lost > 1
        ):
            raise ValueError(f"fault shares must be between 0 and 1 in all: {self}")


@dataclass
class FakeProlific:
    studies: dict[str, dict] = field(default_factory=dict)
    submissions: dict[str, dict] = field(default_factory=dict)
    bulk_bonuses: dict[str, dict] = field(default_factory=dict)
    payments: list[tuple[str, str, Decimal]] = field(default_factory=list)  # (study, participant, amount)
    groups: dict[str, dict] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    faults: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    standing: dict[str, str] = field(default_factory=dict)
    page_size: int = 2
    completed_by: list[str] = field(default_factory=list)
    hung_up: list[float] = field(default_factory=list)
    base: str = ""
    # -- webhooks (issue 32): the hooks API and its sender; see "Webhooks" below ------------------
    hook_secrets: dict[str, dict] = field(default_factory=dict)  # workspace -> its one secret
    hook_subscriptions: dict[str, dict] = field(default_factory=dict)
    hook_faults: list[str] = field(default_factory=list)
    deliveries: list[dict] = field(default_factory=list)
    hook_timeout: float = 10.0
    #: Whether ``GET /hooks/subscriptions/`` applies its ``is_enabled`` filter (the reference's default);
    #: ``False``: every subscription listed whatever is asked, each with its own ``is_enabled`` (issue 41).
    hook_list_filtered: bool = True
    #: Whether ``X-Prolific-Request-Timestamp`` has a fractional part (``time.time()`` as Python prints it).
    hook_fractional_timestamps: bool = False
    #: Each subscription's event log (``GET /hooks/subscriptions/{id}/events/``), by subscription id: every
    #: event made for it, ``PENDING`` until an attempt is answered 2xx (``SUCCEEDED``) or every attempt
    #: failed (``FAILED``). Prolific redelivers "on failure due to network issues, timeouts and listener
    #: errors", the X-Event-ID unchanged, "up to 12 delivery attempts over 24 hours" with full jitter
    #: ("Idempotency and the X-Event-ID Header", "Persistent Failures & Disabling Logic"): here
    #: ``hook_attempts`` attempts (1 unless a test asks for more), a random wait of up to
    #: ``hook_retry_delay`` seconds before each retry, each retry signed with the time it is sent.
    hook_events: dict[str, list[dict]] = field(default_factory=dict)
    hook_attempts: int = 1
    hook_retry_delay: float = 0.0
    _held: list[tuple] = field(default_factory=list)
    _sender: threading.Thread | None = None
    _queue: queue.Queue | None = None
    _gate: threading.Event = field(default_factory=lambda: _opened(threading.Event()))
    _answer_headers: dict[str, str] = field(default_factory=dict)
    #: Bonuses: when each entry of ``payments`` was paid (``time.monotonic()``), and how long
    #: Prolific takes to show a paid bonus on the submission (it pays asynchronously).
    payment_times: list[float] = field(default_factory=list)
    pay_delay: float = 0.0
    #: Money (issue 41): the workspace's service fee (an academic account's 33.3%, no VAT) and what
    #: was taken from its balance, ``(study, kind, amount, fees)`` in dollars: "reward" when a
    #: submission is approved, "bonus" at each pay of a bulk (its set-up's amount and fees, again at
    #: every pay). See :meth:`charged`.
    fee_rate: Decimal = Decimal("0.333")
    charges: list[tuple[str, str, Decimal, Decimal]] = field(default_factory=list)
    # -- random faults of a busy Prolific (issue 41): see FaultShares ------------------------
    shares: FaultShares = field(default_factory=FaultShares)
    dealt: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    call_times: list[tuple[str, float]] = field(default_factory=list)
    _dice: random.Random | None = None
    # -- signed study URLs (issue 56): see "Signed study URLs" below ----------------------------
    #: The workspace (and organisation, when linked to one) a signed study URL's ``prolific`` claim names.
    study_workspace: str = ""
    study_organisation: str = ""
    #: The ``aud`` of a signed study URL: "url" (the reference's payload: the external study URL as
    #: resolved) or "domain" (the JWKS page's words: the tool's domain).
    token_audience: str = "url"
    study_keys: list[tuple[str, object]] = field(default_factory=list)  # (kid, private key); the last signs
    # -- rehearsals (issue 56): test participants and test studies, see "Testing" below -------------------
    test_participants: dict[str, str] = field(default_factory=dict)  # email -> participant id
    test_studies: set[str] = field(default_factory=set)
    # -- places over time (issue 67) ---------------------------------------------------------------
    #: Every change of a study's places, status or taken places: ``(time.monotonic(), study, total, status,
    #: taken)``, so a test can set the places Prolific offered at each moment against the tasks there were.
    place_log: list[tuple[float, str, int, str, int]] = field(default_factory=list)

    def random_fault(self, name: str) -> str | None:
        """The fault ``shares`` deal this API call (``None``: none), counted in ``dealt``."""
        shares = self.shares
        if name == "complete" or not (shares.throttled or shares.failed or shares.lost):
            return None  # the completion URL is Prolific's page for the participant, not its API
        if self._dice is None:
            self._dice = random.Random(shares.seed)
        draw = self._dice.random()
        for fault, share in (
            (f"throttle:{shares.retry_after}", shares.throttled),
            ("error", shares.failed),
            ("lose_response", shares.lost),
        ):
            if draw < share:
                self.dealt[fault.partition(":")[0]] += 1
                return fault
            draw -= share
        return None

    # -- what participants do ----------------------------------------------------------
    def _new_submission(self, study_id: str, participant_id: str) -> str:
        """A participant's place taken (an ACTIVE submission); its id."""
        session = _id()
        self.submissions[session] = {
            "id": session,
            "study_id": study_id,
            "participant_id": participant_id,
            "status": "ACTIVE",
            "started_at": _now(),
            "completed_at": None,
        }
        self._log_places(study_id)
        return session

    def start(self, study_id: str, participant_id: str) -> tuple[str, str]:
        """Take a place in the study: returns (session id, the study URL the participant is sent to)."""
        study = self.studies[study_id]
        if study["status"] != "ACTIVE":
            raise AssertionError(f"study {study_id} is {study['status']}")
        if self._taken(study_id) >= study["total_available_places"]:
            raise AssertionError("no place left")
        session = self._new_submission(study_id, participant_id)
        url = study["external_study_url"]
        for placeholder, value in (
            ("{{%PROLIFIC_PID%}}", participant_id),
            ("{{%STUDY_ID%}}", study_id),
            ("{{%SESSION_ID%}}", session),
        ):
            url = url.replace(placeholder, value)
        if study.get("is_external_study_url_secure"):
            url += ("&" if "?" in url else "?") + urlencode({"prolific_token": self.study_token(url)})
        return session, url

    # -- signed study URLs (issue 56) -------------------------------------------------------------
    # As the reference's study field ``is_external_study_url_secure`` describes: the study URL's
    # parameters signed into a JWT (RS256, header ``kid`` and ``typ``), added as ``prolific_token``;
    # payload iss, iat, exp (iat + 2 minutes), aud (``token_audience``), sub (the session) and
    # ``prolific`` (each parameter of the URL with its value, ``workspace_id``, ``organisation_id``
    # when set). The public keys at ``GET /.well-known/study/jwks.json`` (``JwksResponse``).
    def rotate_study_key(self) -> str:
        """A new signing key, used from now on (the old ones stay published); its kid."""
        from cryptography.hazmat.primitives.asymmetric import rsa

        kid = _id()
        self.study_keys.append((kid, rsa.generate_private_key(public_exponent=65537, key_size=2048)))
        return kid

    def study_claims(self, url: str, *, now: float | None = None) -> dict:
        """The payload Prolific signs for the resolved study URL ``url``."""
        now = time.time() if now is None else now
        parts = urlparse(url)
        values = {k: v[0] for k, v in parse_qs(parts.query).items()}
        signed = dict(values, workspace_id=self.study_workspace)
        if self.study_organisation:
            signed["organisation_id"] = self.study_organisation
        audience = url if self.token_audience == "url" else f"{parts.scheme}://{parts.netloc}"
        return {
            "iss": "https://www.prolific.com",
            "iat": int(now),
            "exp": int(now) + 120,
            "aud": audience,
            "sub": values.get("SESSION_ID", ""),
            "prolific": signed,
        }

    def sign_study_claims(self, claims: dict, *, key=None, kid: str | None = None) -> str:
        """``claims`` signed as Prolific signs a study URL (by the current key unless ``key``/``kid`` given)."""
        import jwt

        if not self.study_keys:
            self.rotate_study_key()
        current_kid, current_key = self.study_keys[-1]
        return jwt.encode(
            claims, key or current_key, algorithm="RS256", headers={"kid": kid or current_kid, "typ": "JWT"}
        )

    def study_token(self, url: str) -> str:
        return self.sign_study_claims(self.study_claims(url))

    def jwks(self, args, query, body):
        import jwt

        if not self.study_keys:
            self.rotate_study_key()
        keys = []
        for kid, key in self.study_keys:
            public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
            keys.append(
                {
                    "kty": "RSA",
                    "kid": kid,
                    "alg": "RS256",
                    "n": public["n"],
                    "e": public["e"],
                    "use": "sig",
                    "key_ops": ["verify"],
                }
            )
        return 200, {"keys": keys}

    def set_status(self, session: str, status: str) -> None:
        self.submissions[session]["status"] = status
        if status == "AWAITING REVIEW" and not self.submissions[session].get("completed_at"):
            self.submissions[session]["completed_at"] = _now()  # as Prolific stamps a completion
        self._log_places(self.submissions[session]["study_id"])
        self._submission_changed(session)

    def _log_places(self, study_id: str) -> None:
        study = self.studies.get(study_id)
        if study is not None:
            entry = (time.monotonic(), study_id, int(study.get("total_available_places") or 0), study["status"])
            self.place_log.append((*entry, self._taken(study_id)))

    def complete_with(self, session: str, code: str) -> str:
        """The participant of ``session`` comes back to Prolific with ``code`` (the completion URL): the code's
        actions as the reference's ``completion_codes`` define them -- ``MANUALLY_REVIEW``: awaiting review;
        ``AUTOMATICALLY_APPROVE``: approved; ``REQUEST_RETURN``: Prolific asks the participant to return the
        study, and they do (returned: the place is free). A code the study does not have changes nothing
        (Prolific tells the participant it is wrong). Returns the session's status."""
        submission = self.submissions[session]
        self.completed_by.append(code)
        study = self.studies[submission["study_id"]]
        found = next((c for c in study.get("completion_codes") or [] if c.get("code") == code), None)
        if found is None or submission["status"] not in ("ACTIVE", "RESERVED"):
            return submission["status"]
        actions = {a.get("action") for a in found.get("actions") or []}
        if "REQUEST_RETURN" in actions:
            self.set_status(session, "RETURNED")
        elif "AUTOMATICALLY_APPROVE" in actions:
            self.set_status(session, "APPROVED")
        else:
            self.set_status(session, "AWAITING REVIEW")
        return submission["status"]

    def _taken(self, study_id: str) -> int:
        return sum(1 for s in self.submissions.values() if s["study_id"] == study_id and s["status"] not in FREES_PLACE)

    # -- routing ------------------------------------------------------------------------
    #: Routes answered without the token (Prolific's page for the participant; a presigned upload URL).
    UNAUTHENTICATED = frozenset({"complete", "jwks"})
    #: Paths whose request body is a file, passed to the route as bytes, not read as JSON.
    RAW_BODY_PATHS: ClassVar[tuple[str, ...]] = ()
    ROUTES = [
        ("GET", r"submissions/complete", "complete"),
        ("GET", r"api/v1/users/me", "me"),  # the token's own account (a connection's test)
        ("GET", r"\.well-known/study/jwks\.json", "jwks"),  # signed study URLs' keys (issue 56)
        ("POST", r"api/v1/studies", "create_study"),
        ("GET", r"api/v1/projects/(?P<project>[^/]+)/studies", "list_studies"),
        ("GET", r"api/v1/studies/(?P<study>[^/]+)", "get_study"),
        ("PATCH", r"api/v1/studies/(?P<study>[^/]+)", "update_study"),
        ("POST", r"api/v1/studies/(?P<study>[^/]+)/transition", "transition_study"),
        ("POST", r"api/v1/studies/(?P<study>[^/]+)/test-study", "create_test_study"),  # issue 56
        ("POST", r"api/v1/researchers/participants", "create_test_participant"),  # issue 56
        ("GET", r"api/v1/studies/(?P<study>[^/]+)/submissions", "list_submissions"),
        ("POST", r"api/v1/submissions/(?P<submission>[^/]+)/transition", "transition_submission"),
        ("GET", r"api/v1/submissions/(?P<submission>[^/]+)", "get_submission"),
        ("POST", r"api/v1/submissions/bonus-payments", "set_up_bonuses"),
        ("POST", r"api/v1/bulk-bonus-payments/(?P<bulk>[^/]+)/pay", "pay_bonuses"),
        ("POST", r"api/v1/study-cost-calculator", "cost"),
        ("GET", r"api/v1/participant-groups", "list_groups"),
        ("POST", r"api/v1/participant-groups", "create_group"),
        ("POST", r"api/v1/participant-groups/(?P<group>[^/]+)/participants", "add_participants"),
        ("GET", r"api/v1/hooks/secrets", "list_hook_secrets"),
        ("POST", r"api/v1/hooks/secrets", "create_hook_secret"),
        ("GET", r"api/v1/hooks/subscriptions", "list_hook_subscriptions"),
        ("POST", r"api/v1/hooks/subscriptions", "create_hook_subscription"),
        ("POST", r"api/v1/hooks/subscriptions/(?P<subscription>[^/]+)", "confirm_hook_subscription"),
        ("DELETE", r"api/v1/hooks/subscriptions/(?P<subscription>[^/]+)", "delete_hook_subscription"),
        ("GET", r"api/v1/hooks/subscriptions/(?P<subscription>[^/]+)/events", "subscription_events"),
        # participant groups across waves (issue 32)
        ("GET", r"api/v1/participant-groups/(?P<group>[^/]+)/participants", "list_members"),
        ("DELETE", r"api/v1/participant-groups/(?P<group>[^/]+)/participants", "remove_participants"),
        ("DELETE", r"api/v1/participant-groups/(?P<group>[^/]+)", "delete_group"),
    ]

    def route(self, method: str, path: str) -> tuple[str, dict] | None:
        path = path.strip("/")
        for verb, pattern, name in self.ROUTES:
            match = re.fullmatch(pattern, path)
            if verb == method and match:
                return name, match.groupdict()
        return None

    def _page(self, items: list[dict], query: dict, base: str) -> dict:
        limit = min(int(query.get("limit", ["100"])[0]), self.page_size)
        offset = int(query.get("offset", ["0"])[0])
        page = {"results": items[offset : offset + limit], "meta": {"count": len(items)}, "_links": {"next": None}}
        if offset + limit < len(items):
            rest = {k: v[0] for k, v in query.items() if k not in ("limit", "offset")}
            page["_links"]["next"] = {"href": f"{base}?{urlencode({**rest, 'limit': limit, 'offset': offset + limit})}"}
        return page

    # -- endpoints ------------------------------------------------------------------------
    def me(self, args, query, body):
        return 200, {"id": "5f0c0ffee0000000000000a1", "email": "researcher@example.org", "name": "Test Researcher"}

    def complete(self, args, query, body):
        code = query.get("cc", [""])[0]
        self.completed_by.append(code)
        return 200, {"completed": code}

    def create_study(self, args, query, body):
        # A study on another site needs its URL; one collecting data on Prolific (a Task Builder batch,
        # ``data_collection_method``) does not.
        external = () if body.get("data_collection_method") else ("external_study_url",)
        missing = [
            k
            for k in ("name", "internal_name", "description", *external, "completion_codes", "reward")
            if k not in body
        ]
        missing += [k for k in ("total_available_places", "estimated_completion_time") if k not in body]
        if missing:
            return 400, {"error": {"detail": {k: ["This field is required."] for k in missing}}}
        study = dict(body, id=_id(), status="UNPUBLISHED")
        self.studies[study["id"]] = study
        return 201, study

    # -- testing (issue 56) -------------------------------------------------------------------------
    # As the reference's "Create a test participant for a researcher" (201 ``{"participant_id"}``; one per
    # researcher account, says Prolific's help "Test study as a participant": a second is refused) and
    # "Create a test study" (the study must be a draft and a test participant must exist; a test study made
    # from it and published to the workspace's test participants; 200 ``{"study_id", "study_url"}``).
    def create_test_participant(self, args, query, body):
        email = body.get("email")
        if not isinstance(email, str) or "@" not in email:
            return 400, {"error": {"detail": {"email": ["Enter a valid email address."]}}}
        if self.test_participants:
            return 400, {"error": {"detail": "a test participant already exists for this researcher"}}
        self.test_participants[email] = _id()
        return 201, {"participant_id": self.test_participants[email]}

    def create_test_study(self, args, query, body):
        draft = self.studies.get(args["study"])
        if draft is None:
            return 404, {"error": {"detail": "Not found."}}
        if draft["status"] != "UNPUBLISHED":
            return 400, {"error": {"detail": f"a test study needs a draft study; this one is {draft['status']}"}}
        if not self.test_participants:
            return 400, {"error": {"detail": "create a test participant first"}}
        test = dict(draft, id=_id(), status="ACTIVE")
        self.studies[test["id"]] = test
        self.test_studies.add(test["id"])
        return 200, {"study_id": test["id"], "study_url": f"{self.base}/studies/{test['id']}"}

    def list_studies(self, args, query, body):
        items = [s for s in self.studies.values() if s.get("project") == args["project"]]
        return 200, self._page(items, query, self.base + f"/api/v1/projects/{args['project']}/studies/")

    def get_study(self, args, query, body):
        study = self.studies.get(args["study"])
        return (200, study) if study else (404, {"error": {"detail": "Not found."}})

    def update_study(self, args, query, body):
        study = self.studies[args["study"]]
        places = body.get("total_available_places")
        if study["status"] != "UNPUBLISHED" and places is not None and places < study["total_available_places"]:
            # The reference: once published, "total_available_places: Only increasing is allowed".
            return 400, {"error": {"detail": {"total_available_places": ["Only increasing is allowed."]}}}
        study.update(body)
        self._log_places(study["id"])
        return 200, study

    def transition_study(self, args, query, body):
        study = self.studies[args["study"]]
        allowed = {"PUBLISH": {"UNPUBLISHED"}, "STOP": {"ACTIVE", "PAUSED"}, "PAUSE": {"ACTIVE"}, "START": {"PAUSED"}}
        action = body.get("action")
        if study["status"] not in allowed.get(action, set()):
            return 400, {"error": {"detail": f"cannot {action} a study that is {study['status']}"}}
        study["status"] = {"PUBLISH": "ACTIVE", "STOP": "COMPLETED", "PAUSE": "PAUSED", "START": "ACTIVE"}[action]
        self._log_places(study["id"])
        self._study_changed(study["id"])
        return 200, study

    def list_submissions(self, args, query, body):
        items = [s for s in self.submissions.values() if s["study_id"] == args["study"]]
        taken = defaultdict(int)
        for s in items:
            taken[s["participant_id"]] += 1
        # As the reference's SubmissionShort: has_siblings says the participant has another submission in the study.
        items = [{**s, "has_siblings": taken[s["participant_id"]] > 1} for s in items]
        return 200, self._page(items, query, self.base + f"/api/v1/studies/{args['study']}/submissions/")

    def get_submission(self, args, query, body):
        """As the reference's "Retrieve a submission": the participant is ``participant`` here, not ``participant_id``."""
        submission = self.submissions.get(args["submission"])
        if submission is None:
            return 404, {"error": {"detail": "Not found."}}
        detail = {k: v for k, v in submission.items() if k not in ("participant_id", "rejection")}
        bonuses = self.shown_bonuses(submission["study_id"], submission["participant_id"])
        return 200, {
            **detail,
            "participant": submission["participant_id"],
            "bonus_payments": bonuses,
        }

    def transition_submission(self, args, query, body):
        submission = self.submissions.get(args["submission"])
        if submission is None:
            return 404, {"error": {"detail": "Not found."}}
        action = body.get("action")
        target = {"APPROVE": "APPROVED", "REJECT": "REJECTED"}.get(action)
        if target is None:
            return 400, {"error": {"detail": f"unknown action {action}"}}
        if submission["status"] == target:
            return 200, submission  # documented: the same request twice is ignored
        if submission["status"] != "AWAITING REVIEW":
            return 400, {"error": {"detail": f"cannot {action} a submission that is {submission['status']}"}}
        if action == "REJECT":
            if len(body.get("message", "")) < 100 or not body.get("rejection_category"):
                return 400, {"error": {"detail": "message (100+ characters) and rejection_category are required"}}
            submission["rejection"] = (body["rejection_category"], body["message"])
        submission["status"] = target
        if target == "APPROVED":  # the reward is paid: its fee is charged on the study's rewards (see charged)
            reward = Decimal(self.studies[submission["study_id"]]["reward"]) / 100
            self.charges.append((submission["study_id"], "reward", reward, Decimal("0")))
        self._log_places(submission["study_id"])
        self._submission_changed(submission["id"])
        return 200, submission

    def set_up_bonuses(self, args, query, body):
        rows = [line.split(",") for line in body["csv_bonuses"].strip().splitlines()]
        # As the reference says: every id must have taken part in the study, or 400 naming them.
        took_part = {s["participant_id"] for s in self.submissions.values() if s["study_id"] == body["study_id"]}
        strangers = [pid for pid, _ in rows if pid not in took_part]
        if strangers:
            return 400, {"error": {"detail": f"not in study {body['study_id']}: {', '.join(strangers)}"}}
        bulk = {"id": _id(), "study": body["study_id"], "rows": [(pid, Decimal(amount)) for pid, amount in rows]}
        self.bulk_bonuses[bulk["id"]] = bulk
        amount = sum(a for _, a in bulk["rows"]) * 100  # cents, as the reference answers
        # One fee for the bulk, on its total, to the cent (a balance moves in whole cents).
        fees = (amount * self.fee_rate).quantize(Decimal("1"), rounding=ROUND_HALF_UP)
        bulk["charge"] = (amount / 100, fees / 100)
        return 201, {
            "id": bulk["id"],
            "study": bulk["study"],
            "amount": float(amount),
            "fees": float(fees),
            "vat": 0,
            "total_amount": float(amount + fees),
        }

    def pay_bonuses(self, args, query, body):
        bulk = self.bulk_bonuses.get(args["bulk"])
        if bulk is None:
            return 404, {"error": {"detail": "Not found."}}
        # Not idempotent, as the reference warns: paying the same bulk twice pays twice.
        self.payments += [(bulk["study"], pid, amount) for pid, amount in bulk["rows"]]
        self.charges.append((bulk["study"], "bonus", *bulk["charge"]))
        self.payment_times += [time.monotonic()] * len(bulk["rows"])
        return 202, "The bonuses will be paid asynchronously."  # the reference's answer: a JSON string

    def cost(self, args, query, body):
        # A third of the reward as fee, rounded to the cent per place (an academic account, no VAT).
        fee = (Decimal(body["reward"]) / 3).quantize(Decimal("1"))
        return 200, {"total_cost": int((Decimal(body["reward"]) + fee) * body["total_available_places"])}

    def list_groups(self, args, query, body):
        workspace = query.get("workspace_id", [""])[0]
        items = [
            {k: v for k, v in g.items() if k != "participants"} | {"participant_count": len(g["participants"])}
            for g in self.groups.values()
            if g["workspace_id"] == workspace and not g.get("is_deleted")
        ]
        return 200, self._page(items, query, self.base + "/api/v1/participant-groups/")

    def create_group(self, args, query, body):
        if not body.get("workspace_id") or not body.get("name"):
            return 400, {"error": {"detail": "name and workspace_id are required"}}
        group = {"id": _id(), "workspace_id": body["workspace_id"], "name": body["name"], "participants": set()}
        self.groups[group["id"]] = group
        return 201, {k: v for k, v in group.items() if k != "participants"}

    def add_participants(self, args, query, body):
        if self._group(args["group"]) is None:
            return 404, {"error": {"detail": "Not found."}}
        self.groups[args["group"]]["participants"].update(body["participant_ids"])
        return 200, {}

    # -- webhooks (issue 32) ---------------------------------------------------------------------
    # The hooks API as the reference describes it (docs.prolific.com/api-reference/webhooks): one
    # secret per workspace (creating one replaces the old), subscriptions that deliver only once
    # confirmed with the X-Hook-Secret header their creation answered (listed with ``is_enabled``
    # false until then; an answer lost with ``lose_response`` leaves the subscription made, its
    # secret known to nobody). The sender: each status change of a submission (set_status, a
    # transition; with it the study's ``study.progress.change``) or a study (a transition), and
    # ``high_return_rate`` (``study.has_high_return_rate``), is POSTed to every enabled subscription
    # of its event type, from a sender thread, with the body the reference shows ("Receiving") and
    # the headers X-Prolific-Request-Signature (base64 HMAC-SHA256 of the workspace's secret over
    # X-Prolific-Request-Timestamp + body), X-Prolific-Request-Timestamp, X-Event-ID and
    # X-Timestamp, one at a time in order. ``hook_faults`` are used up one per change (every event
    # of one change shares it): ``drop`` (never sent), ``duplicate`` (the same request twice),
    # ``forge`` (signed with another secret), ``stale`` (signed ten minutes ago), ``delay:s`` (sent
    # after s seconds), ``hold`` (sent after the next change's: out of order), ``twin`` (each event with a
    # distinct twin of the same body, both sent in the same second: signed alike). ``deliveries``
    # records each request sent and its answer.
    def list_hook_secrets(self, args, query, body):
        workspace = query.get("workspace_id", [""])[0]
        return 200, {"results": [dict(s) for w, s in self.hook_secrets.items() if w == workspace]}

    def create_hook_secret(self, args, query, body):
        if not body.get("workspace_id"):
            return 400, {"error": {"detail": "workspace_id is required"}}
        secret = {"id": _id(), "value": secrets.token_urlsafe(32), "workspace_id": body["workspace_id"]}
        self.hook_secrets[body["workspace_id"]] = secret
        return 201, dict(secret)

    @staticmethod
    def _public(subscription: dict) -> dict:
        return {k: v for k, v in subscription.items() if k != "hook_secret"}

    def list_hook_subscriptions(self, args, query, body):
        workspace = query.get("workspace_id", [None])[0]
        enabled = query.get("is_enabled", ["true"])[0] == "true"
        items = [
            self._public(s)
            for s in self.hook_subscriptions.values()
            if (workspace is None or s["workspace_id"] == workspace)
            and (s["is_enabled"] == enabled or not self.hook_list_filtered)
        ]
        return 200, self._page(items, query, self.base + "/api/v1/hooks/subscriptions/")

    def create_hook_subscription(self, args, query, body):
        missing = [k for k in ("event_type", "target_url", "workspace_id") if not body.get(k)]
        if missing:
            return 400, {"error": {"detail": {k: ["This field is required."] for k in missing}}}
        if body["workspace_id"] not in self.hook_secrets:
            return 400, {"error": {"detail": "create a secret for the workspace first"}}
        subscription = {
            "id": _id(),
            "event_type": body["event_type"],
            "target_url": body["target_url"],
            "workspace_id": body["workspace_id"],
            "is_enabled": False,  # until confirmed
            "hook_secret": secrets.token_hex(16),
        }
        self.hook_subscriptions[subscription["id"]] = subscription
        self._answer_headers = {"X-Hook-Secret": subscription["hook_secret"]}
        return 201, {"results": [self._public(subscription)]}

    def confirm_hook_subscription(self, args, query, body):
        subscription = self.hook_subscriptions.get(args["subscription"])
        if subscription is None:
            return 404, {"error": {"detail": "Not found."}}
        if body.get("secret") != subscription["hook_secret"]:
            return 400, {"error": {"detail": "the secret is not this subscription's X-Hook-Secret"}}
        subscription["is_enabled"] = True
        return 200, self._public(subscription)

    def delete_hook_subscription(self, args, query, body):
        if self.hook_subscriptions.pop(args["subscription"], None) is None:
            return 404, {"error": {"detail": "Not found."}}
        return 204, None

    def enabled_subscriptions(self, event_type: str | None = None) -> list[dict]:
        return [
            s
            for s in self.hook_subscriptions.values()
            if s["is_enabled"] and (event_type is None or s["event_type"] == event_type)
        ]

    def _submission_changed(self, session: str) -> None:
        submission = self.submissions[session]
        study_id = submission["study_id"]
        self._emit(
            [
                (
                    "submission.status.change",
                    {
                        "resource_id": session,
                        "event_type": "submission.status.change",
                        "participant_id": submission["participant_id"],
                        "status": submission["status"],
                    },
                ),
                ("study.progress.change", {"resource_id": study_id, "event_type": "study.progress.change"}),
            ]
        )

    def _study_changed(self, study_id: str) -> None:
        status = self.studies[study_id]["status"]
        self._emit(
            [
                (
                    "study.status.change",
                    {"resource_id": study_id, "event_type": "study.status.change", "metadata": {}, "status": status},
                )
            ]
        )

    def high_return_rate(self, study_id: str, metadata: dict | None = None) -> None:
        """Prolific's warning that many participants return the study (``study.has_high_return_rate``)."""
        event_type = "study.has_high_return_rate"
        self._emit([(event_type, {"resource_id": study_id, "event_type": event_type, "metadata": metadata or {}})])

    def _emit(self, events: list[tuple[str, dict]]) -> None:
        """The events of one change, sharing one fault (see "webhooks" above). ``twin``: each event comes
        with a second, distinct event (its own id) of the same body, both sent in the same second -- so
        signed alike, as Prolific signs the timestamp and the body, not the event id (issue 56)."""
        fault = self.hook_faults.pop(0) if self.hook_faults else ""
        change = [(event_type, payload, fault, _id()) for event_type, payload in events]
        if fault == "twin":
            change += [(event_type, payload, fault, _id()) for event_type, payload in events]
        if fault == "hold":
            self._held.extend(change)
            return
        for event in change:
            self._send_event(*event)
        while self._held:  # what was held goes after this one: out of order
            self._send_event(*self._held.pop(0))

    def _send_event(self, event_type: str, payload: dict, fault: str, event_id: str) -> None:
        entries = []
        for subscription in self.enabled_subscriptions(event_type):
            entry = {
                "id": event_id,
                "datetime_created": _now(),
                "datetime_updated": _now(),
                "event_type": event_type,
                "resource_id": payload["resource_id"],
                "status": "PENDING",
                "target_url": subscription["target_url"],
                "payload": payload,
            }
            self.hook_events.setdefault(subscription["id"], []).append(entry)
            entries.append((subscription, entry))
        if fault == "drop":  # lost on the way, every attempt: Prolific counts it failed
            for _, entry in entries:
                entry.update(status="FAILED", datetime_updated=_now())
            self.deliveries.append({"event_id": event_id, "payload": payload, "fault": fault, "code": None})
            return
        at = float(int(time.time())) if fault == "twin" else None  # both twins stamped with this second
        for subscription, entry in entries:
            secret = self.hook_secrets.get(subscription["workspace_id"], {}).get("value", "")
            self._outbox().put((subscription["target_url"], secret, payload, fault, event_id, entry, at))

    def _outbox(self) -> queue.Queue:
        """Deliveries go out one at a time, in the order they were made, from one sender thread."""
        if self._sender is None:
            self._queue = queue.Queue()
            self._sender = threading.Thread(target=self._send_forever, daemon=True)
            self._sender.start()
        return self._queue

    def _send_forever(self) -> None:
        while True:
            item = self._queue.get()
            try:
                self._gate.wait()
                self._deliver(*item)
            finally:
                self._queue.task_done()

    def _deliver(
        self, url: str, secret: str, payload: dict, fault: str, event_id: str, entry: dict, at: float | None = None
    ) -> None:
        kind, _, seconds = fault.partition(":")
        if kind == "delay":
            time.sleep(float(seconds))
        for attempt in range(max(1, self.hook_attempts)):
            if attempt:
                time.sleep(random.uniform(0, self.hook_retry_delay))  # full jitter
            codes = self._attempt(url, secret, payload, kind, event_id, fault, at if not attempt else None)
            if any(code is not None and 200 <= code < 300 for code in codes):
                entry.update(status="SUCCEEDED", datetime_updated=_now())
                return
        entry.update(status="FAILED", datetime_updated=_now())

    def _attempt(
        self, url: str, secret: str, payload: dict, kind: str, event_id: str, fault: str, at: float | None
    ) -> list:
        """One delivery attempt (two requests for ``duplicate``), sent at ``at`` (default now); the status
        codes answered (``None``: no answer)."""
        codes = []
        sent = (time.time() if at is None else at) - (600 if kind == "stale" else 0)
        stamp = str(sent) if self.hook_fractional_timestamps else str(int(sent))
        body = json.dumps(payload).encode()
        key = ("not-" + secret) if kind == "forge" else secret
        signature = base64.b64encode(hmac.new(key.encode(), stamp.encode() + body, hashlib.sha256).digest())
        headers = {
            "Content-Type": "application/json",
            "X-Prolific-Request-Signature": signature.decode(),
            "X-Prolific-Request-Timestamp": stamp,
            "X-Event-ID": event_id,
            "X-Timestamp": stamp,
        }
        for _ in range(2 if kind == "duplicate" else 1):
            record = {
                "event_id": event_id,
                "payload": payload,
                "fault": fault,
                "sent": time.monotonic(),
                "stamp": stamp,
            }
            request = urllib.request.Request(url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.hook_timeout) as answer:
                    record.update(code=answer.status, answer=answer.read().decode("utf-8", "replace"))
            except urllib.error.HTTPError as exc:
                record.update(code=exc.code, answer=exc.read().decode("utf-8", "replace"))
            except OSError as exc:
                record.update(code=None, answer=repr(exc))
            record["answered"] = time.monotonic()
            self.deliveries.append(record)
            codes.append(record.get("code"))
        return codes

    def subscription_events(self, args, query, body):
        """The reference's ``SubscriptionEventList``: ``results`` only, paged by ``offset``/``limit`` (capped at
        ``page_size``), filtered by ``status`` (one status, or a JSON array of them as a string) and ``resource_id``."""
        if args["subscription"] not in self.hook_subscriptions:
            return 404, {"error": {"detail": "Not found."}}
        wanted = query.get("status", [""])[0]
        if wanted.startswith("["):
            try:
                statuses = set(json.loads(wanted))
            except ValueError:
                return 400, {"error": {"detail": "status is not a JSON array"}}
        else:
            statuses = {wanted} if wanted else set()
        resource = query.get("resource_id", [""])[0]
        items = [
            dict(e)
            for e in self.hook_events.get(args["subscription"], [])
            if (not statuses or e["status"] in statuses) and (not resource or e["resource_id"] == resource)
        ]
        limit = min(int(query.get("limit", ["100"])[0]), self.page_size)
        offset = int(query.get("offset", ["0"])[0])
        return 200, {"results": items[offset : offset + limit]}

    @contextlib.contextmanager
    def deliveries_held(self) -> Iterator[None]:
        """Events made inside the block are sent when it ends (a test's own writes to the site's
        database then never run at the same time as a delivery's)."""
        self._gate.clear()
        try:
            yield
        finally:
            self._gate.set()

    def wait_for_deliveries(self, timeout: float = 30.0) -> None:
        """Wait until every delivery made so far has been answered (or failed)."""
        ends = time.monotonic() + timeout
        while self._queue is not None and self._queue.unfinished_tasks and time.monotonic() < ends:
            time.sleep(0.02)

    # -- participant groups across waves, bonuses (issue 32) ---------------------------------
    def shown_bonuses(self, study_id: str, participant_id: str) -> list[int]:
        """The bonuses Prolific shows on a participant's submission (cents): those paid ``pay_delay`` ago."""
        now = time.monotonic()
        return [
            int(amount * 100)
            for (study, pid, amount), paid in zip(self.payments, self.payment_times, strict=False)
            if study == study_id and pid == participant_id and now - paid >= self.pay_delay
        ]

    def charged(self, study_id: str) -> Decimal:
        """What the study took from the workspace's balance (dollars): the approved submissions'
        rewards with the service fee on their total, rounded half-up to the cent once, and every
        bulk bonus paid with its own fee (as its set-up answered), VAT none."""
        rewards = sum((a for s, k, a, _ in self.charges if s == study_id and k == "reward"), Decimal("0"))
        fee = (rewards * self.fee_rate).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
        bonuses = sum((a + f for s, k, a, f in self.charges if s == study_id and k == "bonus"), Decimal("0"))
        return (rewards + fee + bonuses).quantize(Decimal("0.01"))

    def paid(self, study_id: str, participant_id: str) -> Decimal:
        """The ledger: every dollar paid to a participant in a study, however many times."""
        return sum((a for s, p, a in self.payments if s == study_id and p == participant_id), Decimal("0"))

    def _group(self, group_id: str) -> dict | None:
        group = self.groups.get(group_id)
        return None if group is None or group.get("is_deleted") else group

    def list_members(self, args, query, body):
        group = self._group(args["group"])
        if group is None:
            return 404, {"error": {"detail": "Not found."}}
        items = [
            {"participant_id": pid, "datetime_created": "2026-11-22T10:00:00Z"} for pid in sorted(group["participants"])
        ]
        return 200, self._page(items, query, self.base + f"/api/v1/participant-groups/{args['group']}/participants/")

    def remove_participants(self, args, query, body):
        group = self._group(args["group"])
        if group is None:
            return 404, {"error": {"detail": "Not found."}}
        group["participants"].difference_update(body.get("participant_ids") or [])  # non-members ignored
        return 200, {"results": [{"participant_id": pid} for pid in sorted(group["participants"])]}

    def delete_group(self, args, query, body):
        group = self._group(args["group"])
        if group is None:
            return 404, {"error": {"detail": "Not found."}}
        group["is_deleted"] = True
        return 204, None

    def handle(self, method: str, path: str, query: dict, body: dict, token: str) -> tuple[int, dict, dict, str]:
        """(status, answer, headers, how): ``how`` is how the handler delivers it ("", "slow:s", "drip:s", "html")."""
        found = self.route(method, path)
        if found is None:
            return 404, {"error": {"detail": f"no route {method} {path}"}}, {}, ""
        name, args = found
        self.calls.append(name)
        self.call_times.append((name, time.monotonic()))
        if name not in self.UNAUTHENTICATED and token != f"Token {TOKEN}":
            return 401, {"error": {"detail": "Invalid token."}}, {}, ""
        fault = self.faults[name].pop(0) if self.faults[name] else self.standing.get(name)
        fault = fault or self.random_fault(name)
        if fault == "throttle_bare":
            return 429, {"error": {"detail": "Request was throttled."}}, {}, ""
        if fault and fault.startswith("throttle"):  # "throttle" or "throttle:<seconds>"
            wait = fault.partition(":")[2] or "0"
            return 429, {"error": {"detail": "Request was throttled."}}, {"Retry-After": wait}, ""
        if fault == "error":
            return 502, {"error": {"detail": "Bad gateway"}}, {}, ""
        if fault and fault.startswith("status:"):
            return int(fault.partition(":")[2]), {"error": {"detail": f"scripted {fault}"}}, {}, ""
        status, answer = getattr(self, name)(args, query, body)
        if fault == "lose_response":
            self._answer_headers = {}  # lost with the answer (an X-Hook-Secret nobody will ever see)
            return -1, {}, {}, ""
        headers, self._answer_headers = self._answer_headers, {}
        if fault and fault.partition(":")[0] in ("slow", "drip", "html", "garbled"):
            return status, answer, headers, fault
        return status, answer, headers, f"slow:{self.shares.latency}" if self.shares.latency else ""


class _Handler(BaseHTTPRequestHandler):
    server: LoopbackServer

    def _serve(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        url = urlparse(self.path)
        if url.path.startswith(self.server.fake.RAW_BODY_PATHS):
            body = raw
        else:
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                self._answer(400, {"error": {"detail": "the body is not JSON"}})
                return
        # Held to Prolific's published reference (tests/platforms/prolific/contract.py), outside the
        # lock (a validation takes milliseconds): an operation it does not offer is refused 404/405 and a
        # request it refuses 400, as Prolific would; an answer that breaks its response schemas becomes a
        # 500 naming the breach (both recorded, failing the test).
        query, token = parse_qs(url.query), self.headers.get("Authorization", "")
        refused = contract.checked(self.command, url.path, query, body, token)
        if refused:
            self._answer(*refused)
            return
        with self.server.lock:
            status, answer, headers, how = self.server.fake.handle(self.command, url.path, query, body, token)
        if status != -1 and how.partition(":")[0] not in ("html", "garbled"):  # a hostile answer is meant to break it
            status, answer = contract.answer_checked(self.command, url.path, query, status, answer)
        if status == -1:  # the change is made; the answer never arrives
            self.close_connection = True
            self.connection.shutdown(2)
            return
        kind, _, seconds = how.partition(":")
        if kind == "slow":  # outside the lock: only this connection waits
            time.sleep(float(seconds))
        if status == 204:  # no content: no body
            self.send_response(204)
            self.end_headers()
            return
        data = json.dumps(answer, default=str).encode()
        content_type = "application/json"
        if kind == "garbled":  # valid JSON, not what the reference describes
            status, data = (
                200,
                json.dumps({"id": 7, "status": ["ACTIVE"], "participant": None, "study_id": {}}).encode(),
            )
        if kind == "html":  # a proxy's or a maintenance page, answered 200
            status, content_type = 200, "text/html; charset=utf-8"
            data = b"<!doctype html><html><body><h1>Prolific is down for maintenance</h1></body></html>"
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if kind == "drip":  # every byte on time for a per-read timeout, the whole answer very late
            for byte in data:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(float(seconds))
            return
        self.wfile.write(data)

    def _answer(self, status: int, answer: dict) -> None:
        send(self, status, json.dumps(answer).encode())

    def _serve_quietly(self):
        try:
            self._serve()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up on a slow answer
            self.close_connection = True
            self.server.fake.hung_up.append(time.monotonic())

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve_quietly

    def log_message(self, *args):  # keep test output quiet
        pass


def serve(fake: FakeProlific) -> tuple[str, LoopbackServer]:
    """Start serving ``fake`` on a free loopback port; returns its base URL and the server."""
    server = serve_in_thread(_Handler, fake)
    fake.base = server.base
    return fake.base, server

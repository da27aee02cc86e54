"""Prolific studies: participants arriving on the site, and reconciling the study's submissions.

A Prolific batch is one study. Its URL brings each participant to this site with their
Prolific id, the study id and their session (submission) id; :func:`arrive` gives them a
HIT through the same hand-out as in-house annotators (``local.claim_hit``), recorded as
an ``Assignment`` whose provider id is the session id. They answer on the shared HIT
page and are sent back to Prolific with the study's completion code.

Who a participant is, is Prolific's word, never the URL's. Anyone can type a study URL,
so :func:`verify_arrival` serves a session only after Prolific's ``GET /submissions/{id}/``
said it is a session of *this* study, of *this* participant, and reserved or active; the
answer is kept (``ProlificSession``, so a reload asks nothing) and binds the session to
the browser that first opened it. A link whose ids are not Prolific's shape (24 lowercase
hex characters) is refused without asking. Nothing slow or remote holds a web request:
a new session's check runs on a few threads of the process (:func:`_submit`), asking
Prolific again after a 429 (its ``Retry-After`` honoured, per call), a 5xx or a lost
answer until ``PROLIFIC_ARRIVAL_DEADLINE_SECONDS``, every call paced with all of the site's
others (:func:`platforms.prolific.provider.api_client`); the request waits for it
``PROLIFIC_ARRIVAL_TIMEOUT_SECONDS`` at most, then the participant gets a page that waits
and takes them in by itself (:class:`ArrivalDeferred`), which finds the check's outcome in
the cache every process shares (``core.services.ratelimit``). A throttled or failed call
delays only its own link: there is no pause for everyone. Prolific's 4xx about the link
refuses that link only, remembered for a while; new checks per client address (an IPv6
client per /64) and per study are rate-limited. Nothing is handed out unconfirmed. The
completion code is random per study (:func:`completion_code`), so it cannot be guessed
from ids or times. At sync, an assignment whose session Prolific does not attribute to
its participant is voided (``Assignment.Status.VOID``): never counted, reviewed, paid or
used to block anyone. When the batch is completed the study is stopped, so Prolific
sends nobody to a batch that needs nobody (:func:`close_study`).

Idempotence protocol (Prolific takes no request token):

- the study: ``Batch.prepare_attempted`` is committed before ``POST /studies/``; after an
  attempt whose answer was lost, the study is looked up by its internal name (unique per
  batch) before a second one could be created (``ProlificProvider.prepare``); its id is
  saved the moment it is known; publishing checks the study's status first;
- approving and rejecting: Prolific documents the transition as idempotent, and a
  submission already approved or rejected is never transitioned again;
- places: the study's place count is *set* to a total computed from the state
  (:func:`fit_places`), never increased by a delta, so repeating it adds nothing; the study is
  paused and started again the same way, from the state (its status read first);
- bonuses: a rule paid at every sync (the older ``--bonus``) is paid by the one bonus path,
  :mod:`platforms.prolific.bonuses.services` (its protocol: recorded before anything is
  sent, a lost pay answer settled from Prolific's state, never paid twice automatically);
- judgments: answers are stored once per assignment (``submit_local_assignment``
  refuses a second submit), and a submission is matched to its assignment by session id.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import http.client
import logging
import math
import threading
import time
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.crowd.providers import CrowdProvider, get_provider
from annotation.crowd.services.answers import review_assignment
from annotation.crowd.services.hooks import platform_syncs
from annotation.crowd.services.pseudonyms import worker_for
from annotation.crowd.services.statuses import complete_if_done, settle_hit_statuses
from annotation.crowd.services.sync import SyncResult, run_sync_steps
from annotation.models import Assignment, Batch, Provider, Worker
from core.errors import ServiceError
from core.models import Job
from core.progress import Progress
from core.services.ratelimit import over_limit, shared_cache
from platforms.inhouse.services.handout import claim_hit, release_abandoned
from platforms.prolific.client import Prolific, ProlificError, Submission
from platforms.prolific.models import ProlificSession, ProlificSubmission
from platforms.prolific.provider import (
    BLOCKED_GROUP,
    CONTACT,
    NO_WORK_MESSAGE,
    PROLIFIC_ID,
    RETURN_MESSAGE,
    api_client,
    group_id,
    raise_places,
    total_places,
)
from platforms.prolific.selectors import ENTERING, FREED_REMOTELY, PlaceCount

logger = logging.getLogger(__name__)


@dataclass
class ProlificSyncResult:
    submissions: int = 0
    approved: int = 0
    rejected: int = 0
    freed: int = 0
    updated: int = 0
    kept: int = 0
    bonuses_paid: int = 0
    bonuses_unconfirmed: int = 0
    places: int = 0
    completed: bool = False
    #: Assignments whose session Prolific does not attribute to their participant.
    voided: int = 0
    #: Whether this sync stopped the study (the batch is completed).
    stopped: bool = False
    #: Participants newly added to the failed-gold block-list group (issue 32).
    gold_failures_blocked: int = 0
    #: Participants of the batches it excludes or admits, added to its groups at this sync.
    group_members_added: int = 0


def block_participant(worker: Worker, provider: CrowdProvider | None = None) -> None:
    """Block a Prolific participant: here (no more HITs) and on Prolific (the blocked group)."""
    if worker.provider != Provider.PROLIFIC:
        raise ServiceError(f"worker {worker.pseudonym} is not a Prolific participant")
    Worker.objects.filter(pk=worker.pk).update(blocked=True)
    provider = provider or get_provider(Provider.PROLIFIC)
    provider.client.add_to_group(group_id(provider, BLOCKED_GROUP), [worker.identity.external_id])


# -- participants on the site -----------------------------------------------------------------


class ArrivalRefused(ServiceError):
    """A study link that Prolific does not confirm for this study, participant and browser."""


class StudyClosed(ServiceError):
    """The batch needs nobody any more: the participant is asked, kindly, to return the study."""


def check_link(batch: Batch, participant_id: str, study_id: str, session_id: str) -> None:
    """Refuse a study link whose parameters do not belong to this published Prolific batch."""
    if batch.provider != Provider.PROLIFIC:
        raise ServiceError("this batch does not run on Prolific")
    if not all(isinstance(v, str) and PROLIFIC_ID.fullmatch(v) for v in (participant_id, study_id, session_id)):
        # Refused at once, without asking Prolific: a made-up link of another shape costs nothing.
        raise ServiceError(
            "the link from Prolific is incomplete or malformed: PROLIFIC_PID, STUDY_ID and SESSION_ID"
            " (Prolific's ids, 24 characters 0-9 a-f) are needed"
        )
    if _publishing(batch, study_id):
        # Prolific has the study live (it sent this participant) while the site has not yet recorded
        # the end of its publication: the page waits and comes back (issue 56), never a dead end.
        raise not_open_yet(batch)
    if study_id != batch.hit_type_id:
        raise ServiceError("this link belongs to another Prolific study")
    if batch.status in (Batch.Status.COMPLETED, Batch.Status.CANCELLED):
        raise StudyClosed(
            f"This study is complete: every place has been filled. Thank you for your interest. {RETURN_MESSAGE}"
        )
    if batch.status != Batch.Status.PUBLISHED:
        raise ServiceError("this study is not open yet")


def _publishing(batch: Batch, study_id: str) -> bool:
    """Whether ``batch`` is in the window where Prolific may have its study live while the site still
    counts it as publishing: a draft whose publication was asked for (``prepare_attempted``), whose
    study is this one or not known yet (the answer to ``POST /studies/`` or to the publish was lost)."""
    return (
        batch.status == Batch.Status.DRAFT
        and batch.prepare_attempted is not None
        and batch.hit_type_id in ("", study_id)
    )


def browser_digest(secret: str) -> str:
    """What is stored of a browser's secret: its SHA-256 (the secret stays in the browser's session)."""
    return hashlib.sha256(secret.encode()).hexdigest()


class ArrivalDeferred(ServiceError):
    """Prolific has not confirmed this arrival yet: nothing is handed out, and the page waits and asks again by itself.

    ``retry_after``: seconds after which the page asks again (its refresh and ``Retry-After``);
    ``checking``: a check with Prolific is under way (rather than not begun: this study's checks
    over their rate, this process's checks all busy, or this link's last check failed).
    """

    def __init__(self, message: str, retry_after: float, *, checking: bool = False) -> None:
        super().__init__(message)
        self.retry_after = max(1, math.ceil(retry_after))
        self.checking = checking


class NotOpenYet(ArrivalDeferred):
    """The study is live on Prolific but the site is still finishing its publication: the page waits."""


#: The waiting page while the site finishes publishing a study Prolific already opened.
OPENING_MESSAGE = (
    "The study is opening: Prolific has sent you here a moment before our site finished setting it up."
    " This page checks again by itself every few seconds and takes you to the study as soon as it is"
    " open. Please keep it open: there is no need to reload it or to return the study."
)


def not_open_yet(batch: Batch) -> NotOpenYet:
    return NotOpenYet(OPENING_MESSAGE, settings.PROLIFIC_ARRIVAL_REFRESH_SECONDS, checking=True)


class ClientOverLimit(ArrivalDeferred):
    """This client address has started more checks this minute than ``PROLIFIC_ARRIVALS_PER_CLIENT_PER_MINUTE``."""


UNKNOWN_SESSION = "Prolific does not know this session. Please open the study from Prolific."
#: The waiting page's words: what is happening, that the page acts by itself, what to do (nothing).
CHECKING_MESSAGE = (
    "We are confirming your place with Prolific. This page checks again by itself every few seconds"
    " and takes you to the study as soon as Prolific answers. Please keep it open: there is no need"
    " to reload it or to return the study."
)
BUSY_MESSAGE = (
    "Prolific is busy and has not confirmed your place yet. This page tries again by itself in"
    " {wait} and takes you to the study as soon as Prolific answers. Please keep it open:"
    " there is no need to reload it or to return the study."
)
CLIENT_MESSAGE = (
    "Many people are opening this study from your connection. This page tries again by itself in"
    " {wait}. Please keep it open."
)

#: Checks of arrivals running at once in one process, on threads of their own (never a request's).
CHECK_THREADS = 4
#: Checks started in one process and not yet finished, at most: past it the page waits and asks again.
CHECK_BACKLOG = 64
#: Requests of one process waiting for their check at once (``PROLIFIC_ARRIVAL_TIMEOUT_SECONDS`` at
#: most); the others get the waiting page at once, so arrivals never hold a worker's threads. And
#: once a wait ran out, none waits until a check of the process answers within the timeout again
#: (or ``PROLIFIC_ARRIVAL_DEADLINE_SECONDS`` have passed): a slow Prolific holds no request.
WAITING_REQUESTS = 1
#: A confirmed link's answer is kept this long (seconds) for the browser that comes back for it.
CONFIRMED_SECONDS = 3600
#: After a check failed, the link's next check waits the page's refresh time doubled per failure, at most this long.
FAILED_WAIT_MAX = 60


def _seconds(n: int) -> str:
    return "1 second" if n == 1 else f"{n} seconds"


def busy(seconds: float) -> ArrivalDeferred:
    """The waiting page when no check could begin: Prolific (or the site) is asked again in ``seconds``."""
    wait = max(1, math.ceil(seconds))
    return ArrivalDeferred(BUSY_MESSAGE.format(wait=_seconds(wait)), wait)


@dataclass(frozen=True)
class _Link:
    """A study link's ids. The memories are keyed by the whole link, so a stranger's wrong
    participant id never refuses (nor confirms) the real owner's session."""

    study_id: str
    participant_id: str
    session_id: str

    def key(self, kind: str) -> str:
        link = f"{self.study_id}:{self.participant_id}:{self.session_id}".encode()
        return f"prolific-arrivals:{kind}:{hashlib.sha256(link).hexdigest()}"


@dataclass(frozen=True)
class _Outcome:
    """A check's outcome: ``confirmed`` (the session's status), ``refused`` (the message) or ``failed``."""

    kind: str
    value: str = ""
    retry_after: float = 0.0


def arrival_client(deadline: float) -> Prolific:
    """The client a check asks Prolific with: retries (each 429's ``Retry-After`` honoured) within ``deadline`` seconds.

    Paced with every other call of the site (:func:`platforms.prolific.provider.api_client`).
    A ``Retry-After`` beyond the deadline ends the check at once (it is remembered for the link),
    never a wait shorter than Prolific asked. The deadline bounds the whole call, however slowly
    an answer trickles in (``core.http``'s watchdog), so a check's thread is free again after it.
    """
    return api_client(
        max_attempts=10,
        timeout=max(0.1, deadline / 2),
        deadline=deadline,
        base_delay=0.25,
        max_delay=deadline,
    )


def _ask(session_id: str, deadline: float) -> Submission | None:
    """Prolific's answer about ``session_id`` within ``deadline`` seconds, or ``ProlificError``.

    A garbled answer (not JSON, not a submission) is Prolific failing, like a 5xx.
    """
    if deadline <= 0:
        raise ProlificError("the check waited its whole deadline for a thread", upstream=True)
    try:
        submission = arrival_client(deadline).get_submission(session_id)
    except ProlificError:
        raise
    except (ValueError, LookupError, TypeError, AttributeError, http.client.HTTPException, OSError) as exc:
        raise ProlificError(
            f"Prolific GET submissions/{session_id}/: unusable answer ({exc!r:.200})", upstream=True
        ) from exc
    fields = () if submission is None else (submission.study_id, submission.participant_id, submission.status)
    if not all(isinstance(value, str) for value in fields):
        raise ProlificError(f"Prolific GET submissions/{session_id}/: unusable answer {fields!r:.200}", upstream=True)
    return submission


def _about_the_link(exc: ProlificError) -> bool:
    """Prolific's answer is about the session asked for (403, 404, other 4xx): that link's refusal.

    Not 401 (Prolific refuses this site's token) nor 429 (Prolific throttles this site).
    Anything else (3xx, 5xx, no status: lost, slow, garbled, no start of the pace) is Prolific failing.
    """
    return exc.status is not None and 400 <= exc.status < 500 and exc.status not in (401, 429)


def _judge(link: _Link, submission: Submission | None) -> _Outcome:
    """Prolific's answer about a session, as this link's confirmation or refusal."""
    if submission is None:
        return _Outcome("refused", UNKNOWN_SESSION)
    if submission.study_id != link.study_id:
        return _Outcome("refused", "This Prolific session belongs to another study.")
    if submission.participant_id != link.participant_id:
        return _Outcome("refused", "This Prolific session belongs to another participant.")
    if submission.status not in ENTERING:
        return _Outcome(
            "refused",
            f"Prolific reports this session as {submission.status.lower()[:40]}, so it cannot start the study.",
        )
    return _Outcome("confirmed", submission.status)


def _check(link: _Link, deadline_at: float, failures: int) -> _Outcome:
    """Ask Prolific about ``link`` until ``deadline_at`` (``time.monotonic()``) and remember the outcome.

    Runs on a check thread (or inline, in the request's): its outcome goes into the shared cache
    before the link's "checking" mark is removed, so whichever worker serves the participant's next
    page finds it. A failure is remembered with the time the link's next check waits for (what
    Prolific's ``Retry-After`` asked, or the refresh time doubled per failure in a row).
    """
    try:
        submission = _ask(link.session_id, deadline_at - time.monotonic())
    except ProlificError as exc:
        if _about_the_link(exc):
            outcome = _Outcome("refused", UNKNOWN_SESSION)
        else:
            backoff = settings.PROLIFIC_ARRIVAL_REFRESH_SECONDS * 2**failures
            outcome = _Outcome("failed", retry_after=max(exc.retry_after or 0.0, min(backoff, FAILED_WAIT_MAX)))
            log = logger.error if exc.status == 401 else logger.warning
            log("Prolific could not confirm session %r: %s", link.session_id[:64], exc)
    else:
        outcome = _judge(link, submission)
    _remember(link, outcome, failures)
    return outcome


def _remember(link: _Link, outcome: _Outcome, failures: int) -> None:
    """Keep a check's outcome for the next page (the shared cache), then end the link's "checking" mark."""
    cache = shared_cache()
    try:
        if outcome.kind == "confirmed":
            cache.set(link.key("confirmed"), outcome.value, CONFIRMED_SECONDS)
        elif outcome.kind == "refused" and settings.PROLIFIC_ARRIVAL_REFUSED_SECONDS:
            cache.set(link.key("refused"), outcome.value, settings.PROLIFIC_ARRIVAL_REFUSED_SECONDS)
        elif outcome.kind == "failed":
            until = time.time() + outcome.retry_after
            cache.set(link.key("failed"), {"until": until, "failures": failures + 1}, 600)
        cache.delete(link.key("checking"))
    except Exception:  # the cache's database busy past its timeout: the mark expires by itself
        logger.exception("the outcome of the check of session %r was not kept", link.session_id[:64])


_pool_lock = threading.Lock()
_pool = None
_pool_pid: int | None = None
_started = 0  # checks submitted in this process and not yet finished (under _pool_lock)
_waiting = threading.BoundedSemaphore(WAITING_REQUESTS)
_slow_until = 0.0  # time.monotonic() until which no request of this process waits for its check


def _submit(link: _Link, deadline_at: float, failures: int):
    """Start the check on this process's check threads; the future, or ``None`` when ``CHECK_BACKLOG`` are under way."""
    global _started
    pool = _check_pool()
    with _pool_lock:
        if _started >= CHECK_BACKLOG:
            return None
        _started += 1
        return pool.submit(_check_on_thread, link, deadline_at, failures)


def _check_pool():
    """This process's check threads: made lazily, and again after a fork (gunicorn's workers never share the master's)."""
    global _pool, _pool_pid, _started
    import os
    from concurrent.futures import ThreadPoolExecutor

    with _pool_lock:
        if _pool is None or _pool_pid != os.getpid():
            _pool, _pool_pid, _started = (
                ThreadPoolExecutor(max_workers=CHECK_THREADS, thread_name_prefix="prolific-arrival"),
                os.getpid(),
                0,
            )
        return _pool


def _check_on_thread(link: _Link, deadline_at: float, failures: int) -> _Outcome:
    global _started, _slow_until
    from django.db import connections

    began = time.monotonic()
    try:
        outcome = _check(link, deadline_at, failures)
        if time.monotonic() - began <= settings.PROLIFIC_ARRIVAL_TIMEOUT_SECONDS:
            _slow_until = 0.0  # Prolific answers in time again: requests may wait for their checks
        return outcome
    finally:
        with _pool_lock:
            _started -= 1
        connections.close_all()  # this thread's own connections (the database cache's): nothing else closes them


def _settled(outcome: _Outcome) -> str:
    """The confirmed status of an outcome, or the refusal or the waiting page it means."""
    if outcome.kind == "confirmed":
        return outcome.value
    if outcome.kind == "refused":
        raise ArrivalRefused(outcome.value)
    raise busy(outcome.retry_after)


def _confirmed_status(link: _Link, client: str | None) -> str:
    """Prolific's word on a new session: its status once confirmed; ``ArrivalRefused`` or ``ArrivalDeferred`` otherwise.

    The link's memories first (a refusal, a confirmation, a check under way, a failed check's
    wait), so a page that comes back asks Prolific nothing. Otherwise a new check, within this
    client's and this study's rates: started on a check thread of this process, the request
    waiting for it at most ``PROLIFIC_ARRIVAL_TIMEOUT_SECONDS`` (if fewer than
    ``WAITING_REQUESTS`` wait already). No outcome of one link ever holds up another: there is
    no pause for everyone, only the pace of all calls (``api_client``).
    """
    cache = shared_cache()
    found = cache.get_many([link.key(kind) for kind in ("refused", "confirmed", "checking", "failed")])
    refresh = settings.PROLIFIC_ARRIVAL_REFRESH_SECONDS
    if link.key("refused") in found:
        raise ArrivalRefused(found[link.key("refused")])
    if link.key("confirmed") in found:
        return found[link.key("confirmed")]
    if link.key("checking") in found:
        raise ArrivalDeferred(CHECKING_MESSAGE, refresh, checking=True)
    failed = found.get(link.key("failed")) or {}
    if failed.get("until", 0) > time.time():
        raise busy(failed["until"] - time.time())
    if client is not None:
        wait = over_limit(f"prolific-arrivals:{client}", settings.PROLIFIC_ARRIVALS_PER_CLIENT_PER_MINUTE)
        if wait:
            raise ClientOverLimit(CLIENT_MESSAGE.format(wait=_seconds(wait)), wait)
    wait = over_limit(f"prolific-arrival-checks:{link.study_id}", settings.PROLIFIC_ARRIVAL_CHECKS_PER_STUDY_PER_MINUTE)
    if wait:
        raise busy(wait)
    deadline = settings.PROLIFIC_ARRIVAL_DEADLINE_SECONDS
    # Kept past the deadline by the time a check may wait for a thread: a check that dies leaves no mark for good.
    if not cache.add(link.key("checking"), 1, math.ceil(deadline) + 5):
        raise ArrivalDeferred(CHECKING_MESSAGE, refresh, checking=True)  # the same link, a moment ago
    deadline_at = time.monotonic() + deadline
    failures = failed.get("failures", 0)
    if settings.JOB_LOCAL_RUNNER == "inline":  # the test suite: in this thread, as a Job would be
        return _settled(_check(link, deadline_at, failures))
    future = _submit(link, deadline_at, failures)
    if future is None:
        cache.delete(link.key("checking"))
        raise busy(refresh)
    return _settled(_wait_for(future))


def _wait_for(future) -> _Outcome:
    """The outcome of a check just started, if it comes within ``PROLIFIC_ARRIVAL_TIMEOUT_SECONDS``
    and this request may wait for it (``WAITING_REQUESTS``); else ``ArrivalDeferred``: the check
    goes on, and the participant's next page finds its outcome."""
    global _slow_until
    refresh = settings.PROLIFIC_ARRIVAL_REFRESH_SECONDS
    if time.monotonic() < _slow_until or not _waiting.acquire(blocking=False):
        raise ArrivalDeferred(CHECKING_MESSAGE, refresh, checking=True)
    try:
        return future.result(timeout=settings.PROLIFIC_ARRIVAL_TIMEOUT_SECONDS)
    except TimeoutError:
        _slow_until = time.monotonic() + settings.PROLIFIC_ARRIVAL_DEADLINE_SECONDS
        raise ArrivalDeferred(CHECKING_MESSAGE, refresh, checking=True) from None
    finally:
        _waiting.release()


def verify_arrival(
    batch: Batch,
    participant_id: str,
    study_id: str,
    session_id: str,
    *,
    browser_secret: str,
    client: str | None = None,
) -> ProlificSession:
    """The confirmed session of this arrival; raises ``ArrivalRefused`` for anything Prolific does not confirm.

    The first arrival of a session has it checked with Prolific (:func:`_confirmed_status`;
    ``client`` is the client address's key, whose new checks are rate-limited); its answer is
    kept, bound to this browser (``ProlificSession``: a reload asks nothing), and a refusal is
    remembered for ``PROLIFIC_ARRIVAL_REFUSED_SECONDS``. Raises ``ServiceError`` at once,
    asking nothing, for a link whose ids are not Prolific's shape. Raises ``ArrivalDeferred``
    while Prolific has not answered (a check under way, or not begun): the caller shows the
    page that waits and asks again by itself, and hands out nothing. ``StudyClosed`` when the
    batch needs nobody any more.
    """
    check_link(batch, participant_id, study_id, session_id)
    return _keep_session(
        batch,
        participant_id,
        session_id,
        browser_digest(browser_secret),
        lambda: _confirmed_status(_Link(study_id, participant_id, session_id), client),
    )


def confirm_link(participant_id: str, study_id: str, session_id: str, *, client: str | None = None) -> str:
    """Prolific's word on a link of a study that is not the batch's own (a rehearsal's test study): the session's
    status, checked as any arrival (:func:`_confirmed_status`), nothing recorded; ``ServiceError`` for a link not
    of Prolific's shape."""
    if not all(isinstance(v, str) and PROLIFIC_ID.fullmatch(v) for v in (participant_id, study_id, session_id)):
        raise ServiceError(
            "the link from Prolific is incomplete or malformed: PROLIFIC_PID, STUDY_ID and SESSION_ID are needed"
        )
    return _confirmed_status(_Link(study_id, participant_id, session_id), client)


def _keep_session(batch: Batch, participant_id: str, session_id: str, browser: str, status) -> ProlificSession:
    """The session's row: made with ``status()`` (Prolific's word on it) the first time, bound to ``browser``;
    a later arrival must be the same batch, participant and browser."""
    known = ProlificSession.objects.filter(session_id=session_id).first()
    if known is None:
        status = status()
        try:
            with transaction.atomic():
                return ProlificSession.objects.create(
                    session_id=session_id,
                    batch=batch,
                    participant_id=participant_id,
                    status=status,
                    browser=browser,
                )
        except IntegrityError:  # the same session arriving twice at once: the first one keeps it
            known = ProlificSession.objects.get(session_id=session_id)
    if known.batch_id != batch.pk:
        raise ArrivalRefused("This Prolific session belongs to another study.")
    if known.participant_id != participant_id:
        raise ArrivalRefused("This Prolific session belongs to another participant.")
    if known.browser != browser:
        raise ArrivalRefused("This Prolific session was opened in another browser. Please continue the study there.")
    return known


# -- signed study URLs (issue 56) ---------------------------------------------------------------
#: The status a session is kept with when Prolific's signed token, not an API call, confirmed it.
SIGNED = "SIGNED"
REPLAYED_MESSAGE = (
    "This link from Prolific was already used in another browser. Please continue the study in the browser"
    " where you opened it first, or go back to Prolific and open the study again from there."
)
#: A window arrival starts the batch's interrupted publication again at most this often (seconds).
RESUME_SECONDS = 30


def signed_urls(batch: Batch) -> bool:
    """Whether the batch's study sends participants with Prolific's signed URL (``prolific_token``)."""
    return bool((batch.provider_options or {}).get("signed_urls"))


def read_signed_link(
    batch: Batch, token: str, *, browser_secret: str, now: float | None = None
) -> tuple[str, str, str]:
    """The (participant, study, session) ids that Prolific signed in ``token``, verified here with no API call.

    The token is checked as :mod:`platforms.prolific.study_tokens` says (signature by the
    key of its ``kid`` from the cached key set, :mod:`platforms.prolific.jwks.services`; ``exp``;
    ``aud``; the workspace and organisation), and used once: the same token opened again in another
    browser is refused (in the same browser it is a reload). ``ArrivalRefused`` (nothing recorded)
    for any token that fails; ``ArrivalDeferred`` while no key set could be had from Prolific.
    """
    from django.urls import reverse

    from platforms.prolific.connection.selectors import prolific_settings
    from platforms.prolific.jwks import services as jwks
    from platforms.prolific.study_tokens import LEEWAY_SECONDS, TokenRefused, key_id, verify_study_token

    if batch.provider != Provider.PROLIFIC:
        raise ServiceError("this batch does not run on Prolific")
    now = time.time() if now is None else now
    try:
        keys = jwks.verification_keys(key_id(token), now=now)
        verified = verify_study_token(
            token,
            keys,
            site_url=settings.SITE_URL,
            start_path=reverse("annotation:prolific-start", args=[batch.name]),
            workspace_id=prolific_settings().workspace_id,
            organisation_id=settings.PROLIFIC_ORGANISATION_ID,
            now=now,
        )
    except TokenRefused as exc:
        raise ArrivalRefused(str(exc)) from None
    except jwks.KeysUnavailable:
        raise busy(settings.PROLIFIC_ARRIVAL_REFRESH_SECONDS) from None
    browser = browser_digest(browser_secret)
    cache = shared_cache()
    key = f"prolific-token:{verified.digest}"
    kept = cache.add(key, browser, max(1, math.ceil(verified.expires - now)) + LEEWAY_SECONDS + 60)
    if not kept and cache.get(key) != browser:
        raise ArrivalRefused(REPLAYED_MESSAGE)
    return verified.participant_id, verified.study_id, verified.session_id


def admit_signed(
    batch: Batch, participant_id: str, study_id: str, session_id: str, *, browser_secret: str
) -> ProlificSession:
    """The session of a signed link already verified (:func:`read_signed_link`), kept for this browser.

    No call to Prolific: its signature is Prolific's word. ``NotOpenYet`` while the site is still
    finishing the study's publication (the arrival also starts that publication again if it was
    interrupted, at most every :data:`RESUME_SECONDS`); ``StudyClosed`` when the batch needs nobody.
    """
    try:
        check_link(batch, participant_id, study_id, session_id)
    except NotOpenYet:
        resume_publishing(batch)
        raise
    return _keep_session(batch, participant_id, session_id, browser_digest(browser_secret), lambda: SIGNED)


def resume_publishing(batch: Batch) -> bool:
    """Start the batch's publication again (it resumes where it stopped: ``publish_batch``'s protocol),
    unless it is under way or was started less than :data:`RESUME_SECONDS` ago; whether it was started."""
    from annotation.crowd.services.background import start_publish

    if not shared_cache().add(f"prolific-resume:{batch.pk}", 1, RESUME_SECONDS):
        return False
    try:
        start_publish(batch)
    except ServiceError as exc:  # under way already, or no longer publishable
        logger.info("batch %s: publication not resumed: %s", batch.name, exc)
        return False
    return True


def resume_interrupted_publications(provider: CrowdProvider | None = None) -> list[str]:
    """Publications that stopped while Prolific has the study live (a lost answer, a crash): started again.

    A draft Prolific batch whose publication was asked for and whose study Prolific shows live
    (``ACTIVE`` or ``PAUSED``, found by its id or, when the id's answer was lost, by its internal
    name) is published again by the ordinary job, which resumes where it stopped; the site then
    lets in the participants who were kept waiting (``manage.py poll_prolific``). Returns their names.
    """
    from annotation.crowd.services.background import start_publish
    from platforms.prolific.connection.selectors import prolific_settings

    drafts = Batch.objects.filter(
        provider=Provider.PROLIFIC, status=Batch.Status.DRAFT, prepare_attempted__isnull=False
    ).order_by("pk")
    started = []
    for batch in drafts:
        provider = provider or get_provider(Provider.PROLIFIC)
        try:
            if batch.hit_type_id:
                study = provider.client.get_study(batch.hit_type_id)
            else:
                study = provider.client.find_study(prolific_settings().project_id, provider.internal_name(batch))
        except ProlificError as exc:
            logger.warning("batch %s: its study could not be read (next poll retries): %s", batch.name, exc)
            continue
        if not study or study.get("status") not in ("ACTIVE", "PAUSED"):
            continue
        try:
            start_publish(batch)
        except ServiceError:
            continue  # under way already
        started.append(batch.name)
    return started


def arrive(batch: Batch, session: ProlificSession) -> Assignment | None:
    """The assignment of this confirmed Prolific session: the one already given, or a newly claimed HIT.

    ``None`` when no HIT group has a free place for this participant: the session is marked turned
    away (its place is about to free up, and no task is kept for it) and the study is paused
    (:func:`pause_for_tasks`), so Prolific sends nobody else to no task; the caller tells the
    participant at once and sends them back to return the study (``provider.no_task_url``).
    """
    existing = Assignment.objects.filter(provider_assignment_id=session.session_id, hit__batch=batch).first()
    if existing is not None:
        return existing
    worker = worker_for(Provider.PROLIFIC, session.participant_id)
    if worker.blocked:  # sent back as any participant with no task; the tasks stay there for the others
        _mark_turned_away(session)
        return None
    release_abandoned()
    try:
        from annotation.quality.services.training import qualified_batches

        with transaction.atomic():  # the savepoint to recover from a concurrent arrival of the same session
            claimed = claim_hit(
                worker, qualified_batches(Batch.objects.filter(pk=batch.pk), worker), session.session_id
            )
    except IntegrityError:
        return Assignment.objects.filter(provider_assignment_id=session.session_id, hit__batch=batch).first()
    if claimed is None:
        turn_away(batch, session)
    return claimed


def turn_away(batch: Batch, session: ProlificSession) -> None:
    """No task for this session: it is marked (its place will free up; it waits for no task) and the
    study is paused until a task frees up, on a thread of the process (the participant's page never
    waits for Prolific; the test suite, ``JOB_LOCAL_RUNNER=inline``, pauses in the request)."""
    _mark_turned_away(session)
    if settings.JOB_LOCAL_RUNNER == "inline":
        _pause_quietly(batch.pk)
        return
    _background(_pause_quietly, batch.pk)


def _mark_turned_away(session: ProlificSession) -> None:
    """The session was given no task: its participant returns the study, and no task is kept for it."""
    ProlificSession.objects.filter(pk=session.pk, turned_away_at__isnull=True).update(turned_away_at=timezone.now())


def _pause_quietly(batch_id: int) -> None:
    batch = Batch.objects.filter(pk=batch_id).first()
    if batch is None:
        return
    try:
        pause_for_tasks(batch)
    except (ProlificError, ServiceError) as exc:  # the next sync fits the places again
        logger.warning("batch %s: the study could not be paused (no task to hand out): %s", batch.name, exc)


def _background(function, *args) -> None:
    """``function(*args)`` on this process's check threads (:func:`_submit`'s pool), its connections closed after."""

    def run() -> None:
        from django.db import connections

        try:
            function(*args)
        except Exception:
            logger.exception("%s failed on a background thread", getattr(function, "__name__", function))
        finally:
            connections.close_all()

    _check_pool().submit(run)


# -- places: never more open on Prolific than tasks to hand out (issue 67) ----------------------
@dataclass(frozen=True)
class Places:
    """What :func:`fit_places` found and did: the total in force, the count, and ``PAUSE``/``START``/``""``."""

    total: int
    count: PlaceCount
    transition: str = ""


def fit_places(batch: Batch, provider: CrowdProvider | None = None, submissions=None) -> Places:
    """Make the places in force follow the tasks that can be handed out now (issue 67).

    Prolific only lets a published study's places be raised ("Only increasing is allowed", its
    ``PATCH /studies/{id}/``), and it sends a participant to every place open while the study is
    ``ACTIVE``. So: the total is raised to one place per task left for newcomers
    (:meth:`PlaceCount.wanted`, never lowered); when more places are open than tasks are left
    (places freed on Prolific before their tasks freed on the site, or participants turned away),
    the study is paused (``PAUSE``); a study the site paused (``paused_for_tasks``) is started
    again (``START``) once every open place has a task. Safe to repeat: computed from the state,
    the study's status read first.
    """
    provider = provider or get_provider(Provider.PROLIFIC)
    study_id = batch.hit_type_id
    total, count, status = raise_places(batch, provider, submissions)
    if batch.status != Batch.Status.PUBLISHED:
        return Places(total, count)
    if status == "ACTIVE" and count.open(total) > count.for_newcomers:
        return Places(total, count, "PAUSE" if _pause(batch, provider) else "")
    if status == "PAUSED" and _paused_here(batch) and 0 < count.open(total) <= count.for_newcomers:
        if provider._transition(study_id, "START", when=("PAUSED",)):
            _mark_paused(batch, False)
            return Places(total, count, "START")
        _mark_paused(batch, False)  # started by someone else meanwhile
    return Places(total, count)


def pause_for_tasks(batch: Batch, provider: CrowdProvider | None = None) -> bool:
    """Pause the study of a published batch that has no task for newcomers; whether this call paused it."""
    if batch.status != Batch.Status.PUBLISHED or not batch.hit_type_id:
        return False
    return _pause(batch, provider or get_provider(Provider.PROLIFIC))


def _pause(batch: Batch, provider: CrowdProvider) -> bool:
    """``PAUSE`` (the study ``ACTIVE``), marked first so that a lost answer still lets the site start it again."""
    _mark_paused(batch, True)
    return provider._transition(batch.hit_type_id, "PAUSE", when=("ACTIVE",))


def _paused_here(batch: Batch) -> bool:
    """Whether the site paused the study: read from the database (another process may have paused it)."""
    options = Batch.objects.filter(pk=batch.pk).values_list("provider_options", flat=True).first() or {}
    return bool(options.get("paused_for_tasks"))


def _mark_paused(batch: Batch, paused: bool) -> None:
    """Record whether the site paused the study (a researcher's own pause is never undone)."""
    with transaction.atomic():
        options = Batch.objects.select_for_update().values_list("provider_options", flat=True).get(pk=batch.pk) or {}
        if bool(options.get("paused_for_tasks")) == paused:
            batch.provider_options = options
            return
        options = {k: v for k, v in options.items() if k != "paused_for_tasks"}
        if paused:
            options["paused_for_tasks"] = True
        Batch.objects.filter(pk=batch.pk).update(provider_options=options)
        batch.provider_options = options


def _review(assignment: Assignment, provider: CrowdProvider, approve_all: bool) -> str:
    """Approve valid work, reject invalid work (``review_assignment`` keeps it for a person otherwise)."""
    if assignment.valid is False and assignment.gold_passed is not False and not approve_all:
        provider.reject(assignment, assignment.feedback)
        Assignment.objects.filter(pk=assignment.pk).update(
            status=Assignment.Status.REJECTED, reviewed_at=timezone.now()
        )
        return "rejected"
    return review_assignment(assignment, provider, approve_all=approve_all)


@platform_syncs.register(Provider.PROLIFIC)
def sync_prolific_batch(
    batch: Batch, provider: CrowdProvider, *, approve_all: bool = False, job: Job | None = None, bar: bool = False
) -> SyncResult:
    """A Prolific batch's sync (:func:`annotation.crowd.services.sync.sync_batch` hands it over whole):
    the study's submissions (:func:`sync_prolific`), the HITs' statuses, the steps every sync ends with
    (the quality loop), and the study stopped once the batch is done (nobody more is sent to it)."""
    found = sync_prolific(batch, provider, approve_all=approve_all, job=job, bar=bar)
    settle_hit_statuses(batch)  # rejected and returned submissions free their places
    result = SyncResult(
        updated=found.updated + found.freed,
        approved=found.approved,
        rejected=found.rejected,
        kept=found.kept,
        completed=found.completed,
        platform=found,
    )
    run_sync_steps(batch, provider, result)
    result.completed = batch.status == Batch.Status.COMPLETED  # an escalation round reopens it
    if result.completed:
        found.stopped = close_study(batch, provider)
    return result


def sync_prolific(
    batch: Batch,
    provider: CrowdProvider | None = None,
    *,
    approve_all: bool = False,
    job: Job | None = None,
    bar: bool = False,
) -> ProlificSyncResult:
    """Read every submission of the study, review those awaiting review, pay bonuses, refill places.

    Safe to run any number of times (see the module's protocol).
    """
    if not batch.hit_type_id:
        raise ServiceError(f"batch {batch.name!r} has no Prolific study yet; publish it first")
    provider = provider or get_provider(Provider.PROLIFIC)
    result = ProlificSyncResult()
    submissions = list(provider.client.submissions(batch.hit_type_id))
    result.submissions = len(submissions)
    record_submissions(batch, submissions)
    # First, before anything is reviewed, paid or judged: work Prolific does not attribute.
    result.voided = void_unattributed(batch, submissions)
    result.freed += result.voided
    assignments = {
        a.provider_assignment_id: a
        for a in Assignment.objects.filter(hit__batch=batch).select_related("hit__batch", "worker__identity")
    }
    with Progress(f"Syncing {batch.name}", total=len(submissions), unit="submission", job=job, bar=bar) as progress:
        for sub in submissions:
            _reconcile(sub, assignments.get(sub.id), provider, approve_all, result)
            progress.advance()
    result.bonuses_paid, result.bonuses_unconfirmed = pay_bonuses(batch, provider)
    result.completed = complete_if_done(batch)  # first: a batch done needs no place (its study is stopped)
    result.places = fit_places(batch, provider, submissions).total
    # Last, and never in the way of the work above: a group call that fails (Prolific down, the
    # group deleted on Prolific's site) is logged and sent again at the next sync.
    try:
        result.gold_failures_blocked = _record_gold_failures(batch, provider)
    except ProlificError as exc:
        logger.warning(
            "batch %s: the failed-gold block-list could not be updated (next sync retries): %s", batch.name, exc
        )
    try:
        result.group_members_added = _refill_groups(batch, provider)
    except ProlificError as exc:
        logger.warning(
            "batch %s: its participant groups could not be refilled (next sync retries): %s", batch.name, exc
        )
    return result


#: The longest status a submission row keeps (its column's length).
STATUS_LENGTH = ProlificSubmission._meta.get_field("status").max_length


def record_submissions(batch: Batch, submissions) -> int:
    """Keep what Prolific listed of each submission (status, start, completion) for the batch's page and API.

    One upsert per sync (``bulk_create`` is atomic): rows for sessions Prolific no longer lists are left
    as last seen (a listing never deletes work). A timestamp Prolific writes in a shape Django
    cannot read is kept as unknown rather than failing the sync. Returns the rows written.
    """
    now = timezone.now()
    rows = {
        sub.id: ProlificSubmission(
            submission_id=sub.id,
            batch=batch,
            participant_id=sub.participant_id,
            status=sub.status[:STATUS_LENGTH],
            started_at=_moment(sub.started_at),
            completed_at=_moment(sub.completed_at),
            listed_at=now,
        )
        for sub in submissions
    }
    if not rows:
        return 0
    fields = ["participant_id", "status", "started_at", "completed_at", "listed_at"]
    ProlificSubmission.objects.bulk_create(  # one statement per batch of rows, atomic as bulk_create is
        rows.values(), update_conflicts=True, unique_fields=["submission_id"], update_fields=fields
    )
    return len(rows)


def _moment(text: str | None) -> dt.datetime | None:
    try:
        return parse_datetime(text) if text else None
    except ValueError:
        return None


def _reconcile(sub, assignment: Assignment | None, provider: CrowdProvider, approve_all: bool, result) -> None:
    """Bring one submission and the work done on the site into agreement."""
    if assignment is not None and assignment.status == Assignment.Status.VOID:
        return  # not this participant's work: neither reviewed for them nor held against them
    if sub.status in FREED_REMOTELY:
        # Returned on Prolific, even after submitting here: the participant withdrew, unpaid, and the place
        # went to the next one, so the work counts nowhere (it stayed "submitted", answered and charged, for
        # good). A time-out after submitting here is no withdrawal: the work stays for the researcher's review.
        held = (Assignment.Status.ASSIGNED, Assignment.Status.SUBMITTED)
        if sub.status != "RETURNED":
            held = (Assignment.Status.ASSIGNED,)
        if assignment is not None and assignment.status in held:
            Assignment.objects.filter(pk=assignment.pk).update(status=Assignment.Status.ABANDONED)
            result.freed += 1
    elif sub.status == "AWAITING REVIEW":
        if assignment is None or assignment.status in (Assignment.Status.ASSIGNED, Assignment.Status.ABANDONED):
            # Completed on Prolific without answers recorded here: nothing to pay for.
            provider.client.reject(sub.id, "NO_DATA", NO_WORK_MESSAGE + CONTACT)
            if assignment is not None:
                Assignment.objects.filter(pk=assignment.pk).update(
                    status=Assignment.Status.REJECTED, reviewed_at=timezone.now()
                )
            result.rejected += 1
        elif assignment.status == Assignment.Status.SUBMITTED:
            outcome = _review(assignment, provider, approve_all)
            setattr(result, outcome, getattr(result, outcome) + 1)
    elif (
        sub.status in ("APPROVED", "REJECTED")
        and assignment is not None
        and assignment.status == Assignment.Status.SUBMITTED
    ):
        # Reviewed on Prolific's website.
        Assignment.objects.filter(pk=assignment.pk).update(status=sub.status.lower())
        result.updated += 1


#: How long a hand-out may wait for its session to appear in the study's submissions.
UNKNOWN_SESSION_GRACE = dt.timedelta(minutes=10)


def void_unattributed(batch: Batch, submissions) -> int:
    """Void the batch's open or submitted work whose session Prolific does not give to its participant.

    Arrivals are confirmed with Prolific (:func:`verify_arrival`), so this finds only work
    made before that check existed, or a session Prolific has since dropped. Such work is
    never counted (only submitted and approved work is), reviewed, paid or held against
    the participant it names; its place is free again. A hand-out younger than
    ``UNKNOWN_SESSION_GRACE`` is left alone while Prolific's list may not show it yet.
    """
    owner = {sub.id: sub.participant_id for sub in submissions}
    recent = timezone.now() - UNKNOWN_SESSION_GRACE
    void = []
    candidates = Assignment.objects.filter(
        hit__batch=batch, status__in=[Assignment.Status.ASSIGNED, Assignment.Status.SUBMITTED]
    ).select_related("worker__identity")
    for assignment in candidates:
        participant = owner.get(assignment.provider_assignment_id)
        if participant == assignment.worker.identity.external_id:
            continue
        if (
            participant is None
            and assignment.status == Assignment.Status.ASSIGNED
            and (assignment.accepted_at is None or assignment.accepted_at >= recent)
        ):
            continue
        void.append(assignment.pk)
    if void:
        logger.warning(
            "batch %s: %d assignment(s) voided, their sessions not attributed by Prolific", batch.name, len(void)
        )
    return Assignment.objects.filter(pk__in=void).update(status=Assignment.Status.VOID)


def close_study(batch: Batch, provider: CrowdProvider | None = None) -> bool:
    """Stop the study of a completed or cancelled batch, so Prolific sends nobody more; whether it stopped it now.

    Idempotent: the study's status is read first, and again after a lost answer.
    """
    if batch.status not in (Batch.Status.COMPLETED, Batch.Status.CANCELLED) or not batch.hit_type_id:
        return False
    provider = provider or get_provider(Provider.PROLIFIC)
    stopped = provider.stop_study(batch.hit_type_id)
    _clean_up_groups(batch, provider)
    return stopped


# -- bonuses --------------------------------------------------------------------------------
def pay_bonuses(batch: Batch, provider: CrowdProvider) -> tuple[int, int]:
    """Pay the batch's bonus rule at sync when it says so (the older ``--bonus``: ``at_sync``), through
    the one bonus path (:func:`platforms.prolific.bonuses.services.pay_bonuses`, exactly once);
    returns (paid now, unconfirmed). A rule paid on demand is left to the person who pays it."""
    from platforms.prolific.bonuses import services as prolific_bonuses
    from platforms.prolific.bonuses.selectors import bonus_rule

    rule = bonus_rule(batch)
    if rule is None or not rule.at_sync:
        return 0, 0
    paid = prolific_bonuses.pay_bonuses(batch, provider)
    return paid.paid_now, paid.unconfirmed


def quote(batch: Batch, provider: CrowdProvider | None = None) -> Decimal:
    """Prolific's own price for the batch's places (its cost calculator: fees and VAT of the account)."""
    provider = provider or get_provider(Provider.PROLIFIC)
    return provider.client.study_cost(Decimal(batch.reward), total_places(batch))


# -- participant groups across waves (issue 32) -----------------------------------------------
def _record_gold_failures(batch: Batch, provider: CrowdProvider) -> int:
    """Participants whose work failed the batch's gold threshold join the failed-gold block-list."""
    from platforms.prolific.groups.services import record_gold_failures

    return record_gold_failures(batch, provider)


def _refill_groups(batch: Batch, provider: CrowdProvider) -> int:
    """The batch's allow- and block-lists gain the participants its named batches took since publication."""
    from platforms.prolific.groups.services import refill_groups

    return refill_groups(batch, provider)


def _clean_up_groups(batch: Batch, provider: CrowdProvider) -> None:
    """The closed study's own allow- and block-list groups are deleted on Prolific."""
    from platforms.prolific.groups.services import clean_up_groups

    clean_up_groups(batch, provider)

"""Prolific's word on a study link, asked off the request (docs/prolific.md, "How arrivals are verified").

Anyone can type a study URL, so a session is served only after Prolific's ``GET /submissions/{id}/``
said it is one of *this* study and participant, reserved or active. Nothing slow holds a web request:
the check runs on a few threads of the process, retried within ``PROLIFIC_ARRIVAL_DEADLINE_SECONDS``;
the request waits ``PROLIFIC_ARRIVAL_TIMEOUT_SECONDS`` at most, then gets a page that waits
(:class:`ArrivalDeferred`) for the outcome in the shared cache. A failure concerns its own link only.
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import math
import threading
import time
from dataclasses import dataclass

from django.conf import settings

from annotation.models import Batch
from core.errors import ServiceError
from core.services.ratelimit import over_limit, shared_cache
from platforms.prolific.client import Prolific, ProlificError, Submission
from platforms.prolific.provider import api_client
from platforms.prolific.selectors import ENTERING

logger = logging.getLogger(__name__)


class ArrivalRefused(ServiceError):
    """A study link that Prolific does not confirm for this study, participant and browser."""


class StudyClosed(ServiceError):
    """The batch needs nobody any more: the participant is asked, kindly, to return the study."""


class ArrivalDeferred(ServiceError):
    """Not confirmed yet: nothing handed out, the page asks again after ``retry_after`` seconds; ``checking``:
    a check is under way (not: not begun)."""

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
#: Requests of one process waiting for their check at once; the others get the waiting page, so
#: arrivals never hold a worker's threads. After a wait ran out, none waits until a check answers in
#: time again (or ``PROLIFIC_ARRIVAL_DEADLINE_SECONDS`` passed): a slow Prolific holds no request.
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
class Link:
    """A study link's ids; memories are keyed by the whole link, so a stranger's wrong participant id
    never refuses (nor confirms) the owner's session."""

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
    """The client a check asks Prolific with: paced with the site's other calls, retried within ``deadline``
    seconds for the whole call (a ``Retry-After`` beyond it ends the check), so the thread is freed after it."""
    return api_client(
        max_attempts=10,
        timeout=max(0.1, deadline / 2),
        deadline=deadline,
        base_delay=0.25,
        max_delay=deadline,
    )


def _ask(session_id: str, deadline: float) -> Submission | None:
    """Prolific's answer about ``session_id`` within ``deadline`` seconds, or ``ProlificError`` (a garbled one too)."""
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
    """A 4xx but 401 (this site's token) and 429 (throttling) is about the session: that link's refusal;
    anything else is Prolific failing."""
    return exc.status is not None and 400 <= exc.status < 500 and exc.status not in (401, 429)


def _judge(link: Link, submission: Submission | None) -> _Outcome:
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


def _check(link: Link, deadline_at: float, failures: int) -> _Outcome:
    """Ask Prolific about ``link`` until ``deadline_at`` (``time.monotonic()``) and remember the outcome
    (a failure with its wait: ``Retry-After``, or the refresh time doubled per failure in a row)."""
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


def _remember(link: Link, outcome: _Outcome, failures: int) -> None:
    """Keep the outcome in the shared cache *before* ending the "checking" mark, so any worker finds it."""
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


def _submit(link: Link, deadline_at: float, failures: int):
    """Start the check on this process's check threads; the future, or ``None`` when ``CHECK_BACKLOG`` are under way."""
    global _started
    pool = _check_pool()
    with _pool_lock:
        if _started >= CHECK_BACKLOG:
            return None
        _started += 1
        return pool.submit(_check_on_thread, link, deadline_at, failures)


def _check_pool():
    """This process's check threads, made again after a fork (gunicorn's workers never share the master's)."""
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


def _check_on_thread(link: Link, deadline_at: float, failures: int) -> _Outcome:
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
    if outcome.kind == "confirmed":
        return outcome.value
    if outcome.kind == "refused":
        raise ArrivalRefused(outcome.value)
    raise busy(outcome.retry_after)


def confirmed_status(link: Link, client: str | None) -> str:
    """Prolific's word on a new session (``ArrivalRefused``, ``ArrivalDeferred``): the link's memories first,
    else a new check within the client's and the study's rates."""
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
    """The check's outcome within ``PROLIFIC_ARRIVAL_TIMEOUT_SECONDS`` if this request may wait
    (``WAITING_REQUESTS``); else ``ArrivalDeferred`` while the check goes on."""
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


def in_background(function, *args) -> None:
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

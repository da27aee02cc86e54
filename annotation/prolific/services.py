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
hex characters) is refused without asking. Nothing slow or remote waits in the web request
without a bound: an arrival asks Prolific at most once, with a short timeout that is also
the call's deadline, and no retries (:func:`arrival_client`); Prolific's 4xx about the link
refuses that link only; when Prolific is slow, throttling or failing the participant is
asked at once to reload in a minute (:class:`ArrivalDeferred`), no arrival asks again for
``PROLIFIC_ARRIVAL_PAUSE_SECONDS`` (then one probes), and a link whose check failed waits
longer; a link Prolific refused is refused from memory for a while; new sessions checked
per study are rate-limited (the view limits each client, an IPv6 client per /64). All of
it in the cache every process shares (``core.services.ratelimit``). Nothing is handed out unconfirmed. The
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
  (:func:`ensure_places`), never increased by a delta, so repeating it adds nothing;
- bonuses: a rule paid at every sync (the older ``--bonus``) is paid by the one bonus path,
  :mod:`annotation.crowd.services.prolific_bonuses` (its protocol: recorded before anything is
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

from annotation.crowd.clients.prolific_api import Prolific, ProlificError, Submission
from annotation.crowd.providers import CrowdProvider, get_provider
from annotation.crowd.providers.prolific import (
    BLOCKED_GROUP,
    CONTACT,
    FREED_REMOTELY,
    NO_WORK_MESSAGE,
    PROLIFIC_ID,
    RETURN_MESSAGE,
    ensure_places,
    group_id,
    total_places,
)
from annotation.crowd.services.answers import review_assignment
from annotation.crowd.services.pseudonyms import worker_for
from annotation.crowd.services.statuses import complete_if_done
from annotation.inhouse.services.handout import claim_hit, release_abandoned
from annotation.models import Assignment, Batch, ProlificSession, Provider, Worker
from core.errors import ServiceError
from core.models import Job
from core.progress import Progress
from core.services.ratelimit import over_limit, shared_cache

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
#: Sessions Prolific lets into a study: a place reserved, or the study started.
ENTERING = {"RESERVED", "ACTIVE"}


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
    if study_id != batch.hit_type_id:
        raise ServiceError("this link belongs to another Prolific study")
    if batch.status in (Batch.Status.COMPLETED, Batch.Status.CANCELLED):
        raise StudyClosed(
            f"This study is complete: every place has been filled. Thank you for your interest. {RETURN_MESSAGE}"
        )
    if batch.status != Batch.Status.PUBLISHED:
        raise ServiceError("this study is not open yet")


def browser_digest(secret: str) -> str:
    """What is stored of a browser's secret: its SHA-256 (the secret stays in the browser's session)."""
    return hashlib.sha256(secret.encode()).hexdigest()


class ArrivalDeferred(ServiceError):
    """Prolific could not be asked about an arrival just now: the participant reloads later; nothing is handed out.

    ``retry_after``: seconds after which asking again may work (the page's ``Retry-After``).
    """

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


#: The shared cache's key of "no arrival asks Prolific until then" (a UNIX time). Kept
#: ``PROBE_WINDOW`` seconds past that time, so the pause ends with one probe, not a stampede.
PAUSE_KEY = "prolific-arrivals:paused-until"
#: Held by the one arrival that asks Prolific when a pause has ended (the others get the 503 at once).
PROBE_KEY = "prolific-arrivals:probe"
#: How long after a pause's end its record stays (seconds): arrivals then probe one at a time.
PROBE_WINDOW = 60
#: A link whose check failed in a way the link itself might cause (5xx, garbled, lost, slow) is
#: not asked about again for this many pauses: one crafted link cannot end pause after pause.
DEFERRED_PAUSES = 4


def arrival_client() -> Prolific:
    """The client arrivals ask Prolific with: one attempt, a short timeout and deadline, no back-off in the request.

    The deadline bounds the whole call (a Prolific that drips its answer frees the pool's
    thread after the arrival timeout, not after the client's default ``CALL_DEADLINE``).
    """
    timeout = settings.PROLIFIC_ARRIVAL_TIMEOUT_SECONDS
    return Prolific(
        settings.PROLIFIC_API_URL,
        settings.PROLIFIC_API_TOKEN,
        max_attempts=1,
        timeout=timeout,
        deadline=timeout,
    )


_asking = None
_asking_made = threading.Lock()


def _ask_once(client: Prolific, session_id: str) -> Submission | None:
    """Prolific's answer about ``session_id``, or ``ProlificError`` within the arrival timeout, whatever Prolific does.

    The client's timeout bounds each socket read, not a whole answer that trickles in byte by
    byte; the call therefore runs on a small pool of threads and the request waits for it
    at most the timeout (a call still running then finishes on its own, its answer unused).
    A garbled answer (not JSON, not a submission) is Prolific failing, like a 5xx.
    """
    global _asking
    from concurrent.futures import ThreadPoolExecutor

    with _asking_made:  # made lazily: after gunicorn forks its workers, never in the master
        if _asking is None:
            _asking = ThreadPoolExecutor(max_workers=4, thread_name_prefix="prolific-arrival")
    timeout = settings.PROLIFIC_ARRIVAL_TIMEOUT_SECONDS
    future = _asking.submit(client.get_submission, session_id)
    try:
        submission = future.result(timeout=timeout + 0.25)
    except TimeoutError:
        future.cancel()
        raise ProlificError(
            f"Prolific GET submissions/{session_id}/: no whole answer in {timeout:g} s", upstream=True
        ) from None
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


def _link_key(kind: str, batch: Batch, participant_id: str, session_id: str) -> str:
    """Keyed by the whole link, so a stranger's wrong participant id never refuses the real owner's session."""
    link = f"{batch.hit_type_id}:{participant_id}:{session_id}".encode()
    return f"prolific-arrivals:{kind}:{hashlib.sha256(link).hexdigest()}"


def _refusal_key(batch: Batch, participant_id: str, session_id: str) -> str:
    return _link_key("refused", batch, participant_id, session_id)


def _deferral_key(batch: Batch, participant_id: str, session_id: str) -> str:
    return _link_key("deferred", batch, participant_id, session_id)


def _refuse(batch: Batch, participant_id: str, session_id: str, message: str) -> ArrivalRefused:
    if settings.PROLIFIC_ARRIVAL_REFUSED_SECONDS:
        shared_cache().set(
            _refusal_key(batch, participant_id, session_id), message, settings.PROLIFIC_ARRIVAL_REFUSED_SECONDS
        )
    return ArrivalRefused(message)


UNKNOWN_SESSION = "Prolific does not know this session. Please open the study from Prolific."
RELOAD_MESSAGE = "We could not confirm your session with Prolific just now. Please reload this page in a minute."


def _about_the_link(exc: ProlificError) -> bool:
    """Prolific's answer is about the session asked for (403, 404, other 4xx): that link's refusal.

    Not 401 (Prolific refuses this site's token) nor 429 (Prolific throttles this site): those
    are about every arrival. Anything else (3xx, 5xx, no status: lost, slow, garbled) is
    Prolific failing.
    """
    return exc.status is not None and 400 <= exc.status < 500 and exc.status not in (401, 429)


def _about_this_site(exc: ProlificError) -> bool:
    """401 and 429 concern this site's token and rate, whatever link was asked about."""
    return exc.status in (401, 429)


def _seconds_until(moment: float) -> int:
    return max(1, math.ceil(moment - time.time()))


def _confirm_with_prolific(batch: Batch, participant_id: str, session_id: str, client: Prolific | None) -> Submission:
    """Prolific's answer about a new session, asked at most once; refusals, failures and pauses remembered.

    - a refusal (the session is unknown, of another study or participant, not entering; or
      Prolific answers 403/404/4xx about it) is that link's, remembered
      ``PROLIFIC_ARRIVAL_REFUSED_SECONDS``;
    - a failure nobody can choose per link (401: our token; 429: our rate) pauses every
      arrival for ``PROLIFIC_ARRIVAL_PAUSE_SECONDS``;
    - a failure that might come from the link itself (3xx, 5xx, garbled, lost, too slow)
      pauses every arrival too, and defers this link for ``DEFERRED_PAUSES`` pauses, so that
      one crafted link cannot end pause after pause;
    - when a pause ends, one arrival probes Prolific (``PROBE_KEY``); the others get the 503
      page until its answer ends the pause or starts a new one.
    """
    cache = shared_cache()
    refused = cache.get(_refusal_key(batch, participant_id, session_id))
    if refused is not None:
        raise ArrivalRefused(refused)
    deferred_until = cache.get(_deferral_key(batch, participant_id, session_id))
    if deferred_until is not None and deferred_until > time.time():
        raise ArrivalDeferred(RELOAD_MESSAGE, _seconds_until(deferred_until))
    paused_until = cache.get(PAUSE_KEY)
    if paused_until is not None and paused_until > time.time():
        raise ArrivalDeferred(RELOAD_MESSAGE, _seconds_until(paused_until))
    wait = over_limit(
        f"prolific-arrival-checks:{batch.hit_type_id}", settings.PROLIFIC_ARRIVAL_CHECKS_PER_STUDY_PER_MINUTE
    )
    if wait:
        raise ArrivalDeferred(RELOAD_MESSAGE, wait)
    timeout = settings.PROLIFIC_ARRIVAL_TIMEOUT_SECONDS
    probing = paused_until is not None  # a pause just ended: one arrival at a time asks
    if probing and not cache.add(PROBE_KEY, 1, math.ceil(timeout) + 2):
        raise ArrivalDeferred(RELOAD_MESSAGE, 1)
    try:
        submission = _ask_once(client or arrival_client(), session_id)
    except ProlificError as exc:
        if _about_the_link(exc):
            # Prolific refuses to look this id up: a link nobody was given (no pause for anyone else).
            _pause_over(cache, probing)
            raise _refuse(batch, participant_id, session_id, UNKNOWN_SESSION) from exc
        # Slow, throttling, failing, garbled, or this site's token refused: nobody asks for a while.
        pause = settings.PROLIFIC_ARRIVAL_PAUSE_SECONDS
        if pause:
            now = time.time()
            # The record outlives the pause by PROBE_WINDOW (and a second: the database cache
            # rounds expiry times down); the time stored is what ends it.
            cache.set(PAUSE_KEY, now + pause, pause + PROBE_WINDOW + 1)
            if not _about_this_site(exc):
                deferred = pause * DEFERRED_PAUSES
                cache.set(_deferral_key(batch, participant_id, session_id), now + deferred, deferred + 1)
        if probing:
            cache.delete(PROBE_KEY)
        logger.warning("Prolific could not confirm session %r of batch %s: %s", session_id[:64], batch.name, exc)
        raise ArrivalDeferred(RELOAD_MESSAGE, max(pause, 1)) from exc
    _pause_over(cache, probing)
    if submission is None:
        raise _refuse(batch, participant_id, session_id, UNKNOWN_SESSION)
    if submission.study_id != batch.hit_type_id:
        raise _refuse(batch, participant_id, session_id, "This Prolific session belongs to another study.")
    if submission.participant_id != participant_id:
        raise _refuse(batch, participant_id, session_id, "This Prolific session belongs to another participant.")
    if submission.status not in ENTERING:
        raise _refuse(
            batch,
            participant_id,
            session_id,
            f"Prolific reports this session as {submission.status.lower()[:40]}, so it cannot start the study.",
        )
    return submission


def _pause_over(cache, probing: bool) -> None:
    """Prolific answered the probe: every arrival may ask again."""
    if probing:
        cache.delete(PAUSE_KEY)
        cache.delete(PROBE_KEY)


def verify_arrival(
    batch: Batch,
    participant_id: str,
    study_id: str,
    session_id: str,
    *,
    browser_secret: str,
    client: Prolific | None = None,
) -> ProlificSession:
    """The confirmed session of this arrival; raises ``ArrivalRefused`` for anything Prolific does not confirm.

    The first arrival of a session asks Prolific whose session it is, once (``client``,
    by default :func:`arrival_client`); its answer is kept, bound to this browser, and a
    refusal is remembered for ``PROLIFIC_ARRIVAL_REFUSED_SECONDS``. Raises ``ServiceError``
    at once, asking nothing, for a link whose ids are not Prolific's shape. Raises
    ``ArrivalDeferred`` when Prolific could not be asked now (slow, throttling, failing,
    garbled, paused after such a failure, this link deferred after its own failure, another
    arrival probing after a pause, or this study's checks over their rate): the
    caller asks the participant to try again and hands out nothing. ``StudyClosed`` when
    the batch needs nobody any more.
    """
    check_link(batch, participant_id, study_id, session_id)
    browser = browser_digest(browser_secret)
    known = ProlificSession.objects.filter(session_id=session_id).first()
    if known is None:
        submission = _confirm_with_prolific(batch, participant_id, session_id, client)
        try:
            with transaction.atomic():
                return ProlificSession.objects.create(
                    session_id=session_id,
                    batch=batch,
                    participant_id=participant_id,
                    status=submission.status,
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


def arrive(batch: Batch, session: ProlificSession) -> Assignment | None:
    """The assignment of this confirmed Prolific session: the one already given, or a newly claimed HIT.

    ``None`` when no HIT group has a free place for this participant (they are asked to
    return the study).
    """
    existing = Assignment.objects.filter(provider_assignment_id=session.session_id, hit__batch=batch).first()
    if existing is not None:
        return existing
    worker = worker_for(Provider.PROLIFIC, session.participant_id)
    if worker.blocked:
        return None
    release_abandoned()
    try:
        from annotation.quality.services.training import qualified_batches

        with transaction.atomic():  # the savepoint to recover from a concurrent arrival of the same session
            return claim_hit(worker, qualified_batches(Batch.objects.filter(pk=batch.pk), worker), session.session_id)
    except IntegrityError:
        return Assignment.objects.filter(provider_assignment_id=session.session_id, hit__batch=batch).first()


def _review(assignment: Assignment, provider: CrowdProvider, approve_all: bool) -> str:
    """Approve valid work, reject invalid work (``review_assignment`` keeps it for a person otherwise)."""
    if assignment.valid is False and assignment.gold_passed is not False and not approve_all:
        provider.reject(assignment, assignment.feedback)
        Assignment.objects.filter(pk=assignment.pk).update(
            status=Assignment.Status.REJECTED, reviewed_at=timezone.now()
        )
        return "rejected"
    return review_assignment(assignment, provider, approve_all=approve_all)


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
    result.places = ensure_places(batch, provider, submissions)
    result.completed = complete_if_done(batch)
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


def _reconcile(sub, assignment: Assignment | None, provider: CrowdProvider, approve_all: bool, result) -> None:
    """Bring one submission and the work done on the site into agreement."""
    if assignment is not None and assignment.status == Assignment.Status.VOID:
        return  # not this participant's work: neither reviewed for them nor held against them
    if sub.status in FREED_REMOTELY:
        if assignment is not None and assignment.status == Assignment.Status.ASSIGNED:
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
    the one bonus path (:func:`annotation.crowd.services.prolific_bonuses.pay_bonuses`, exactly once);
    returns (paid now, unconfirmed). A rule paid on demand is left to the person who pays it."""
    from annotation.crowd.selectors import bonus_rule
    from annotation.crowd.services import prolific_bonuses

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
    from annotation.crowd.services.prolific_groups import record_gold_failures

    return record_gold_failures(batch, provider)


def _refill_groups(batch: Batch, provider: CrowdProvider) -> int:
    """The batch's allow- and block-lists gain the participants its named batches took since publication."""
    from annotation.crowd.services.prolific_groups import refill_groups

    return refill_groups(batch, provider)


def _clean_up_groups(batch: Batch, provider: CrowdProvider) -> None:
    """The closed study's own allow- and block-list groups are deleted on Prolific."""
    from annotation.crowd.services.prolific_groups import clean_up_groups

    clean_up_groups(batch, provider)

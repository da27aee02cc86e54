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
the browser that first opened it. A lost answer is retried by the client and, if it
stays lost, the participant is asked to reload: nothing is handed out unconfirmed. The
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
- bonuses: a ``Bonus`` row per approved assignment is committed before anything is
  sent; the bulk payment is set up (this pays nothing, so a lost answer is simply set up
  again), its id saved, then ``pay_attempted`` committed *before* the pay call, which
  Prolific warns is not idempotent. A bonus whose pay call lost its answer is therefore
  never paid again automatically: sync reports it as unconfirmed for a person to check
  on Prolific (and ``confirm_bonuses`` marks it paid);
- judgments: answers are stored once per assignment (``submit_local_assignment``
  refuses a second submit), and a submission is matched to its assignment by session id.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import re
import secrets
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.utils import timezone

from core.errors import ServiceError
from core.models import Job
from core.progress import Progress

from ..models import Assignment, Batch, Bonus, ProlificSession, Provider, Worker, WorkerIdentity
from ..providers import CrowdProvider, get_provider
from ..pseudonyms import worker_for
from .answers import review_assignment
from .local import _FREED, _release_abandoned, claim_hit

logger = logging.getLogger(__name__)

#: What Prolific calls a place still held by a participant.
HOLDS_PLACE = {"RESERVED", "ACTIVE", "AWAITING REVIEW", "APPROVED", "PARTIALLY APPROVED", "SCREENED OUT"}
FREED_REMOTELY = {"RETURNED", "TIMED-OUT"}
_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
OPTION_KEYS = {"estimated_minutes", "devices", "filters", "bonus", "exclude_batches", "completion_code"}
CONTACT = " If you think this is a mistake, please message us through Prolific."
#: Added to rejections for the answers given, so the participant understands them (Prolific wants 100+ characters).
REJECTION_CONTEXT = (
    " The study asked you to label search queries; some had a known answer, used to check that the"
    " instructions were followed." + CONTACT
)
NO_WORK_MESSAGE = (
    "We received your completion on Prolific, but no answers to the queries of this study were recorded"
    " for your session on our site, so there is no work to pay for."
)


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


def validate_options(options: dict) -> None:
    """Refuse Prolific settings the API would refuse, before the batch is created."""
    unknown = set(options) - OPTION_KEYS
    if unknown:
        raise ServiceError(f"unknown Prolific option(s): {', '.join(sorted(unknown))}")
    minutes = options.get("estimated_minutes", 10)
    if not isinstance(minutes, int) or not 1 <= minutes <= 24 * 60:
        raise ServiceError("--estimated-minutes must be a whole number of minutes between 1 and 1440")
    from ..prolific import DEVICES

    bad = [d for d in options.get("devices", []) if d not in DEVICES]
    if bad:
        raise ServiceError(f"unknown device(s) {', '.join(bad)}; use {', '.join(DEVICES)}")
    bonus = Decimal(str(options.get("bonus", "0")))
    if bonus < 0 or bonus != bonus.quantize(Decimal("0.01")):
        raise ServiceError("--bonus must be whole cents, at least 0")
    for name in options.get("exclude_batches", []):
        if not Batch.objects.filter(name=name).exists():
            raise ServiceError(f"--exclude-batch {name!r}: no such batch")


#: Letters and digits that cannot be mistaken for each other; 10 of them are 50 random bits.
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 10


def new_completion_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def completion_code(batch: Batch) -> str:
    """The study's completion code: random, made once per batch and kept in its options.

    Participants see it only after submitting their HIT. It is never derived from the
    batch's id or creation time, which anyone could guess. Batches are given one when
    created; an older batch gets one here, committed before its study could be made.
    """
    code = batch.provider_options.get("completion_code")
    if code:
        return code
    with transaction.atomic():
        locked = Batch.objects.select_for_update().get(pk=batch.pk)
        code = locked.provider_options.get("completion_code") or new_completion_code()
        locked.provider_options = {**locked.provider_options, "completion_code": code}
        locked.save(update_fields=["provider_options"])
    batch.provider_options = locked.provider_options
    return code


def study_url(batch: Batch) -> str:
    """The external study URL with Prolific's placeholders as URL parameters."""
    from django.urls import reverse

    path = reverse("annotation:prolific-start", args=[batch.name])
    return (
        f"{settings.SITE_URL.rstrip('/')}{path}"
        "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )


def total_places(batch: Batch) -> int:
    return sum(batch.hits.values_list("max_assignments", flat=True))


def study_fields(batch: Batch, provider: CrowdProvider) -> dict:
    """The body of ``POST /studies/`` for the batch (a draft; published by ``launch``)."""
    from ..prolific import cents

    if not settings.PROLIFIC_PROJECT_ID:
        raise ServiceError("PROLIFIC_PROJECT_ID is not set: the id of the Prolific project that holds the studies")
    if settings.PROLIFIC_API_URL.startswith("https://api.prolific.com") and not settings.SITE_URL.startswith(
        "https://"
    ):
        raise ServiceError(
            f"SITE_URL is {settings.SITE_URL!r}: participants on Prolific need this site's public https address"
        )

    options = batch.provider_options
    minutes = int(options.get("estimated_minutes", 10))
    groups = exclusion_groups(batch, provider)
    filters = list(options.get("filters", []))
    if groups:
        filters.append({"filter_id": "participant_group_blocklist", "selected_values": groups})
    fields = {
        "name": batch.title,
        "internal_name": provider.internal_name(batch),
        "description": batch.description,
        "external_study_url": study_url(batch),
        "prolific_id_option": "url_parameters",
        "completion_codes": [
            {"code": completion_code(batch), "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}
        ],
        "total_available_places": total_places(batch),
        "estimated_completion_time": minutes,
        "maximum_allowed_time": max(minutes * 3, int(batch.assignment_duration.total_seconds() // 60)),
        "reward": cents(batch.reward),
        "device_compatibility": list(options.get("devices") or ["desktop"]),
        "filters": filters,
        "project": settings.PROLIFIC_PROJECT_ID,
    }
    return fields


# -- participant groups ------------------------------------------------------------------
BLOCKED_GROUP = "blocked participants"


def _group(provider: CrowdProvider, name: str) -> str:
    """The id of the workspace's group called ``name``; created when missing (looked up first)."""
    workspace = settings.PROLIFIC_WORKSPACE_ID
    if not workspace:
        raise ServiceError("PROLIFIC_WORKSPACE_ID is not set: participant groups belong to a Prolific workspace")
    found = provider.client.find_group(workspace, name)
    return found["id"] if found else provider.client.create_group(workspace, name)["id"]


def exclusion_groups(batch: Batch, provider: CrowdProvider) -> list[str]:
    """Groups whose members may not take the study: blocked participants, and earlier batches' ones."""
    groups = []
    blocked = list(
        WorkerIdentity.objects.filter(provider=Provider.PROLIFIC, worker__blocked=True).values_list(
            "external_id", flat=True
        )
    )
    if blocked:
        group = _group(provider, BLOCKED_GROUP)
        provider.client.add_to_group(group, blocked)
        groups.append(group)
    earlier = batch.provider_options.get("exclude_batches") or []
    if earlier:
        ids = list(
            WorkerIdentity.objects.filter(provider=Provider.PROLIFIC, worker__assignments__hit__batch__name__in=earlier)
            .distinct()
            .values_list("external_id", flat=True)
        )
        group = _group(provider, f"took part before {batch.name}")
        provider.client.add_to_group(group, ids)
        groups.append(group)
    return groups


def block_participant(worker: Worker, provider: CrowdProvider | None = None) -> None:
    """Block a Prolific participant: here (no more HITs) and on Prolific (the blocked group)."""
    if worker.provider != Provider.PROLIFIC:
        raise ServiceError(f"worker {worker.pseudonym} is not a Prolific participant")
    Worker.objects.filter(pk=worker.pk).update(blocked=True)
    provider = provider or get_provider(Provider.PROLIFIC)
    provider.client.add_to_group(_group(provider, BLOCKED_GROUP), [worker.identity.external_id])


# -- participants on the site -----------------------------------------------------------------
#: Sessions Prolific lets into a study: a place reserved, or the study started.
ENTERING = {"RESERVED", "ACTIVE"}
RETURN_MESSAGE = "Please return the study on Prolific; you will not be penalised."


class ArrivalRefused(ServiceError):
    """A study link that Prolific does not confirm for this study, participant and browser."""


class StudyClosed(ServiceError):
    """The batch needs nobody any more: the participant is asked, kindly, to return the study."""


def check_link(batch: Batch, participant_id: str, study_id: str, session_id: str) -> None:
    """Refuse a study link whose parameters do not belong to this published Prolific batch."""
    if batch.provider != Provider.PROLIFIC:
        raise ServiceError("this batch does not run on Prolific")
    if not all(_ID.match(v or "") for v in (participant_id, study_id, session_id)):
        raise ServiceError("the link from Prolific is incomplete: PROLIFIC_PID, STUDY_ID and SESSION_ID are needed")
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


def verify_arrival(
    batch: Batch,
    participant_id: str,
    study_id: str,
    session_id: str,
    *,
    browser_secret: str,
    provider: CrowdProvider | None = None,
) -> ProlificSession:
    """The confirmed session of this arrival; raises ``ArrivalRefused`` for anything Prolific does not confirm.

    The first arrival of a session asks Prolific whose session it is; its answer is kept,
    bound to this browser. Raises ``ProlificError`` when Prolific could not be asked
    (after the client's retries): the caller asks the participant to try again and hands
    out nothing. ``StudyClosed`` when the batch needs nobody any more.
    """
    check_link(batch, participant_id, study_id, session_id)
    browser = browser_digest(browser_secret)
    known = ProlificSession.objects.filter(session_id=session_id).first()
    if known is None:
        provider = provider or get_provider(Provider.PROLIFIC)
        submission = provider.client.get_submission(session_id)
        if submission is None:
            raise ArrivalRefused("Prolific does not know this session. Please open the study from Prolific.")
        if submission.study_id != batch.hit_type_id:
            raise ArrivalRefused("This Prolific session belongs to another study.")
        if submission.participant_id != participant_id:
            raise ArrivalRefused("This Prolific session belongs to another participant.")
        if submission.status not in ENTERING:
            raise ArrivalRefused(
                f"Prolific reports this session as {submission.status.lower()}, so it cannot start the study."
            )
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
    _release_abandoned()
    try:
        from .training import qualified_batches

        return claim_hit(worker, qualified_batches(Batch.objects.filter(pk=batch.pk), worker), session.session_id)
    except IntegrityError:
        return Assignment.objects.filter(provider_assignment_id=session.session_id, hit__batch=batch).first()


def return_url() -> str:
    """Where a participant returns a study: Prolific's participant site (the completion URL's host)."""
    from urllib.parse import urlsplit

    parts = urlsplit(settings.PROLIFIC_COMPLETION_URL)
    return f"{parts.scheme}://{parts.netloc}/" if parts.scheme and parts.netloc else "https://app.prolific.com/"


def completion_url(batch: Batch) -> str:
    return f"{settings.PROLIFIC_COMPLETION_URL}{completion_code(batch)}"


# -- reviewing ------------------------------------------------------------------------------
def rejection_for(assignment: Assignment, feedback: str) -> tuple[str, str]:
    """Prolific's rejection category and a message the participant can understand (100+ characters)."""
    if assignment.gold_passed is False:
        category = "FAILED_CHECK"
        text = feedback or "Too many of the check questions with a known answer were answered wrongly."
    elif assignment.submitted_at is None:
        return "NO_DATA", NO_WORK_MESSAGE + CONTACT
    else:
        category = "LOW_EFFORT"
        text = feedback or "Some queries were left without a usable answer."
    return category, (text.rstrip() + REJECTION_CONTEXT)[:2000]


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
    from .sync import _complete_if_done

    result.completed = _complete_if_done(batch)
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
    return provider.stop_study(batch.hit_type_id)


def ensure_places(batch: Batch, provider: CrowdProvider, submissions=None) -> int:
    """Set the study's places so that every HIT group can get all its assignments; returns the total.

    Places Prolific counts as held (sessions active, awaiting review or paid) plus the
    free places of the HIT groups, less the sessions that hold a Prolific place but have
    not reached the site yet (they will take free places). Only ever raised.
    """
    study_id = batch.hit_type_id
    if submissions is None:
        submissions = list(provider.client.submissions(study_id))
    held_remotely = [s for s in submissions if s.status in HOLDS_PLACE]
    on_site = set(Assignment.objects.filter(hit__batch=batch).values_list("provider_assignment_id", flat=True))
    arriving = sum(1 for s in held_remotely if s.id not in on_site)
    free = 0
    for hit in batch.hits.annotate(held=Count("assignments", filter=~Q(assignments__status__in=_FREED))):
        free += max(0, hit.max_assignments - hit.held)
    target = len(held_remotely) + max(0, free - arriving)
    current = int(provider.client.get_study(study_id).get("total_available_places") or 0)
    if target > current:
        provider.client.set_places(study_id, target)
        return target
    return current


# -- bonuses --------------------------------------------------------------------------------
def pay_bonuses(batch: Batch, provider: CrowdProvider) -> tuple[int, int]:
    """Pay the batch's bonus once to every approved participant; returns (paid now, unconfirmed)."""
    from ..prolific import ProlificUnknownOutcome

    amount = Decimal(str(batch.provider_options.get("bonus") or "0"))
    if amount > 0:
        owed = Assignment.objects.filter(hit__batch=batch, status=Assignment.Status.APPROVED, bonus__isnull=True)
        Bonus.objects.bulk_create([Bonus(assignment=a, amount=amount) for a in owed], ignore_conflicts=True)
    pending = Bonus.objects.filter(assignment__hit__batch=batch, paid=False).select_related(
        "assignment__worker__identity"
    )
    unconfirmed = [b for b in pending if b.pay_attempted is not None]
    to_pay = [b for b in pending if b.pay_attempted is None]
    if not to_pay:
        return 0, len(unconfirmed)
    by_bulk: dict[str, list[Bonus]] = {}
    fresh = [b for b in to_pay if not b.bulk_id]
    if fresh:
        totals: Counter = Counter()
        for bonus in fresh:
            totals[bonus.assignment.worker.identity.external_id] += bonus.amount
        bulk_id = provider.client.set_up_bonuses(batch.hit_type_id, dict(totals))
        Bonus.objects.filter(pk__in=[b.pk for b in fresh]).update(bulk_id=bulk_id)
        for bonus in fresh:
            bonus.bulk_id = bulk_id
    for bonus in to_pay:
        by_bulk.setdefault(bonus.bulk_id, []).append(bonus)
    paid = 0
    for bulk_id, bonuses in by_bulk.items():
        keys = [b.pk for b in bonuses]
        Bonus.objects.filter(pk__in=keys).update(pay_attempted=timezone.now())
        try:
            provider.client.pay_bonuses(bulk_id)
        except ProlificUnknownOutcome:
            unconfirmed += bonuses
            continue
        Bonus.objects.filter(pk__in=keys).update(paid=True)
        paid += len(bonuses)
    return paid, len(unconfirmed)


@transaction.atomic
def confirm_bonuses(batch: Batch, *, paid: bool) -> int:
    """After checking on Prolific: mark unconfirmed bonuses paid, or free them to be paid again."""
    unconfirmed = Bonus.objects.filter(assignment__hit__batch=batch, paid=False, pay_attempted__isnull=False)
    if paid:
        return unconfirmed.update(paid=True)
    return unconfirmed.update(pay_attempted=None, bulk_id="")


def quote(batch: Batch, provider: CrowdProvider | None = None) -> Decimal:
    """Prolific's own price for the batch's places (its cost calculator: fees and VAT of the account)."""
    provider = provider or get_provider(Provider.PROLIFIC)
    return provider.client.study_cost(Decimal(batch.reward), total_places(batch))

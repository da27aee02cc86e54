"""Prolific studies: a confirmed participant's task (from the in-house hand-out, the session id as the
assignment's provider id), the study's places, and reconciling its submissions.

Idempotence (no request token): ``Batch.prepare_attempted`` is committed before the study is created,
and after a lost answer it is looked up by internal name; a reviewed submission is never transitioned
again; places are *set* from the state (:func:`fit_places`), never raised by a delta; bonuses take the
one bonus path (:mod:`.bonuses.services`); a submission is matched to its assignment by session id.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

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
from platforms.inhouse.services.handout import claim_hit, release_abandoned
from platforms.prolific.arrivals.services.checks import in_background
from platforms.prolific.client import ProlificError, moment
from platforms.prolific.groups.services import clean_up_groups, record_gold_failures, refill_groups
from platforms.prolific.models import ProlificSession, ProlificSubmission
from platforms.prolific.provider import (
    CONTACT,
    NO_WORK_MESSAGE,
    raise_places,
    total_places,
    transition_study,
)
from platforms.prolific.selectors import FREED_REMOTELY, PlaceCount

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
    #: Participants newly added to the failed-gold block-list group.
    gold_failures_blocked: int = 0
    #: Participants of the batches it excludes or admits, added to its groups at this sync.
    group_members_added: int = 0


def block_participant(worker: Worker, provider: CrowdProvider | None = None) -> None:
    """Block a Prolific participant: here (no more HITs) and on Prolific (the blocked group)."""
    if worker.provider != Provider.PROLIFIC:
        raise ServiceError(f"worker {worker.pseudonym} is not a Prolific participant")
    Worker.objects.filter(pk=worker.pk).update(blocked=True)
    (provider or get_provider(Provider.PROLIFIC)).block_worker(worker.identity.external_id, "")


def arrive(batch: Batch, session: ProlificSession) -> Assignment | None:
    """The assignment of this confirmed session: the one already given, or a newly claimed HIT; ``None``
    when there is no free place for them (:func:`turn_away`; the caller sends them to ``no_task_url``)."""
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
    """No task for this session: it is marked, and the study paused on a thread (the participant's page never
    waits for Prolific; ``JOB_LOCAL_RUNNER=inline`` pauses in the request)."""
    _mark_turned_away(session)
    if settings.JOB_LOCAL_RUNNER == "inline":
        _pause_quietly(batch.pk)
        return
    in_background(_pause_quietly, batch.pk)


def _mark_turned_away(session: ProlificSession) -> None:
    ProlificSession.objects.filter(pk=session.pk, turned_away_at__isnull=True).update(turned_away_at=timezone.now())


def _pause_quietly(batch_id: int) -> None:
    batch = Batch.objects.filter(pk=batch_id).first()
    if batch is None:
        return
    try:
        pause_for_tasks(batch)
    except (ProlificError, ServiceError) as exc:  # the next sync fits the places again
        logger.warning("batch %s: the study could not be paused (no task to hand out): %s", batch.name, exc)


# -- places: never more open on Prolific than tasks to hand out ------------------------------
@dataclass(frozen=True)
class Places:
    """:func:`fit_places`'s total in force, count, and ``PAUSE``/``START``/``""``."""

    total: int
    count: PlaceCount
    transition: str = ""


def fit_places(batch: Batch, provider: CrowdProvider | None = None, submissions=None) -> Places:
    """Make the places in force follow the tasks that can be handed out now (repeatable). Prolific only lets
    places be raised and sends someone to every open place of an ``ACTIVE`` study, so with more places open
    than tasks the study is paused, and started again once every open place has a task."""
    provider = provider or get_provider(Provider.PROLIFIC)
    study_id = batch.hit_type_id
    total, count, status = raise_places(batch, provider, submissions)
    if batch.status != Batch.Status.PUBLISHED:
        return Places(total, count)
    if status == "ACTIVE" and count.open(total) > count.for_newcomers:
        return Places(total, count, "PAUSE" if _pause(batch, provider) else "")
    if status == "PAUSED" and _paused_here(batch) and 0 < count.open(total) <= count.for_newcomers:
        if transition_study(provider.client, study_id, "START", when=("PAUSED",)):
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
    return transition_study(provider.client, batch.hit_type_id, "PAUSE", when=("ACTIVE",))


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
    """A Prolific batch's whole sync: :func:`sync_prolific`, the HITs' statuses, the steps every sync ends
    with, and the study stopped once the batch is done."""
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
    """Read every submission, review those awaiting review, pay bonuses, fit places (repeatable)."""
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
    # Last, never in the way of the work above: a failed group call is logged and tried at the next sync.
    for count, step, failed in (
        ("gold_failures_blocked", record_gold_failures, "the failed-gold block-list could not be updated"),
        ("group_members_added", refill_groups, "its participant groups could not be refilled"),
    ):
        try:
            setattr(result, count, step(batch, provider))
        except ProlificError as exc:
            logger.warning("batch %s: %s (next sync retries): %s", batch.name, failed, exc)
    return result


#: The longest status a submission row keeps (its column's length).
STATUS_LENGTH = ProlificSubmission._meta.get_field("status").max_length


def record_submissions(batch: Batch, submissions) -> int:
    """Keep what Prolific listed of each submission (a session no longer listed stays as last seen); the rows."""
    now = timezone.now()
    rows = {
        sub.id: ProlificSubmission(
            submission_id=sub.id,
            batch=batch,
            participant_id=sub.participant_id,
            status=sub.status[:STATUS_LENGTH],
            started_at=moment(sub.started_at),
            completed_at=moment(sub.completed_at),
            listed_at=now,
        )
        for sub in submissions
    }
    if not rows:
        return 0
    fields = ["participant_id", "status", "started_at", "completed_at", "listed_at"]
    ProlificSubmission.objects.bulk_create(
        rows.values(), update_conflicts=True, unique_fields=["submission_id"], update_fields=fields
    )
    return len(rows)


def _reconcile(sub, assignment: Assignment | None, provider: CrowdProvider, approve_all: bool, result) -> None:
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
    """Void open or submitted work whose session Prolific does not give to its participant: never counted,
    reviewed, paid or held against anyone (a hand-out within ``UNKNOWN_SESSION_GRACE`` may not be listed yet)."""
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
    """Stop a completed or cancelled batch's study (idempotent) and delete its groups; whether it stopped now."""
    if batch.status not in (Batch.Status.COMPLETED, Batch.Status.CANCELLED) or not batch.hit_type_id:
        return False
    provider = provider or get_provider(Provider.PROLIFIC)
    stopped = provider.stop_study(batch.hit_type_id)
    clean_up_groups(batch, provider)
    return stopped


# -- bonuses --------------------------------------------------------------------------------
def pay_bonuses(batch: Batch, provider: CrowdProvider) -> tuple[int, int]:
    """Pay a bonus rule that is paid ``at_sync`` through the one bonus path; (paid now, unconfirmed)."""
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

"""Reads of a Prolific batch for its page and API: each submission as Prolific listed it, beside this
site's figures of the same session's work; a study's places against its tasks (:func:`count_places`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count
from django.utils import timezone

from annotation.crowd.pay_rate import hourly_rate, median_or_none, seconds_taken
from annotation.models import Assignment, Batch, Hit
from platforms.inhouse.services.handout import holds_place
from platforms.prolific.models import ProlificSession

#: At most this many submissions are listed on the page and in one API answer (newest first);
#: the counts and medians cover them all.
SHOWN = 500


@dataclass(frozen=True)
class SubmissionRow:
    submission_id: str
    participant: str  # this site's pseudonym of the participant, never their Prolific id
    status: str  # as Prolific listed it
    work: str  # the session's assignment here (submitted, approved, rejected, abandoned...), "" if none
    started_at: object
    completed_at: object
    seconds: int | None
    hourly_rate: Decimal | None
    gold_correct: int | None
    gold_total: int | None
    valid: bool | None


@dataclass(frozen=True)
class Submissions:
    rows: list[SubmissionRow]
    total: int
    by_status: dict[str, int]
    median_seconds: float | None
    median_hourly_rate: float | None
    reward: Decimal
    listed_at: object  # when a sync last read the list (None before the first sync)


def submissions(batch: Batch) -> Submissions:
    """The batch's Prolific submissions, newest first, with time taken and the reward per HIT over it
    (the median over completed submissions, as Prolific's dashboard gives it)."""
    records = list(batch.prolific_submissions.order_by("-started_at", "submission_id"))
    work = {
        a.provider_assignment_id: a
        for a in Assignment.objects.filter(
            hit__batch=batch, provider_assignment_id__in=[r.submission_id for r in records[:SHOWN]]
        ).select_related("worker")
    }
    # Sessions without work here (returned before answering) named by their participant's other work, if any.
    without_work = {r.participant_id for r in records[:SHOWN] if r.submission_id not in work}
    pseudonyms = (
        dict(
            Assignment.objects.filter(hit__batch=batch, worker__identity__external_id__in=without_work).values_list(
                "worker__identity__external_id", "worker__pseudonym"
            )
        )
        if without_work
        else {}
    )
    by_status = Counter(record.status for record in records)
    times = [seconds_taken(record.started_at, record.completed_at) for record in records]
    rates = [hourly_rate(batch.reward, seconds) for seconds in times]
    rows = []
    for record, seconds, rate in zip(records[:SHOWN], times, rates, strict=False):
        assignment = work.get(record.submission_id)
        rows.append(
            SubmissionRow(
                submission_id=record.submission_id,
                participant=(assignment.worker.pseudonym if assignment else pseudonyms.get(record.participant_id, "")),
                status=record.status,
                work=assignment.status if assignment else "",
                started_at=record.started_at,
                completed_at=record.completed_at,
                seconds=seconds,
                hourly_rate=rate,
                gold_correct=assignment.gold_correct if assignment else None,
                gold_total=assignment.gold_total if assignment else None,
                valid=assignment.valid if assignment else None,
            )
        )
    return Submissions(
        rows=rows,
        total=len(records),
        by_status=dict(sorted(by_status.items())),
        median_seconds=median_or_none(times),
        median_hourly_rate=median_or_none(rates),
        reward=batch.reward,
        listed_at=max((r.listed_at for r in records), default=None),
    )


#: Where a batch's rehearsal is recorded: ``Batch.provider_options[REHEARSAL_KEY]``.
REHEARSAL_KEY = "rehearsal"


def rehearsal_of(batch: Batch) -> dict:
    """What is recorded of the batch's rehearsal (empty when none was asked for)."""
    return dict((batch.provider_options or {}).get(REHEARSAL_KEY) or {})


def rehearsal_study_id(batch: Batch) -> str:
    """The id of the batch's test study, or ``""``."""
    return rehearsal_of(batch).get("study_id", "")


#: What Prolific calls a place still held by a participant.
HOLDS_PLACE = {"RESERVED", "ACTIVE", "AWAITING REVIEW", "APPROVED", "PARTIALLY APPROVED", "SCREENED OUT"}


#: Sessions Prolific ended without the site: their place is free again.
FREED_REMOTELY = {"RETURNED", "TIMED-OUT"}
#: Sessions Prolific lets into a study: a place reserved, or the study started.
ENTERING = {"RESERVED", "ACTIVE"}


@dataclass(frozen=True)
class PlaceCount:
    """A study's places against its tasks: ``held`` (by Prolific's count), of them ``leaving`` (turned away)
    and ``coming`` (not given a task yet, each will take one); ``free``: task places the hand-out gives now."""

    held: int
    leaving: int
    coming: int
    free: int

    @property
    def for_newcomers(self) -> int:
        """Tasks left for participants Prolific has not sent yet."""
        return max(0, self.free - self.coming)

    def open(self, total: int) -> int:
        """The places Prolific will offer newcomers with ``total`` places (those turned away free theirs)."""
        return max(0, total - self.held + self.leaving)

    def wanted(self) -> int:
        """The total that offers exactly one place per task left for newcomers."""
        return self.held - self.leaving + self.for_newcomers


def count_places(batch: Batch, submissions) -> PlaceCount:
    """The batch's :class:`PlaceCount` from Prolific's list of the study's ``submissions`` and the site's state."""
    held = [s for s in submissions if s.status in HOLDS_PLACE]
    entering = {s.id for s in held if s.status in ENTERING}
    deadline = timezone.now() - batch.assignment_duration
    holding = Assignment.objects.filter(holds_place(deadline), hit__batch=batch)
    with_task = set(
        holding.filter(provider_assignment_id__in=entering).values_list("provider_assignment_id", flat=True)
    )
    turned = set(
        ProlificSession.objects.filter(
            batch=batch, session_id__in=entering - with_task, turned_away_at__isnull=False
        ).values_list("session_id", flat=True)
    )
    free = 0
    if batch.status == Batch.Status.PUBLISHED:
        taken = dict(holding.values("hit").annotate(n=Count("pk")).values_list("hit", "n"))
        for pk, most in batch.hits.filter(status=Hit.Status.OPEN).values_list("pk", "max_assignments"):
            free += max(0, most - taken.get(pk, 0))
    return PlaceCount(held=len(held), leaving=len(turned), coming=len(entering - with_task - turned), free=free)

"""Reads of a Prolific batch for its page and API: each submission as Prolific listed it, beside
this site's figures of the same session's work (issue 45: what Prolific's dashboard shows).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from annotation.crowd.pay_rate import hourly_rate, median_or_none, seconds_taken
from annotation.models import Assignment, Batch

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
    """The batch's Prolific submissions, newest first, with time taken and effective hourly rate.

    The rate is the batch's reward per HIT over the time Prolific measured (start to
    completion); the median is over completed submissions, as Prolific's dashboard gives it.
    """
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
    by_status: dict[str, int] = {}
    times = []
    for record in records:
        by_status[record.status] = by_status.get(record.status, 0) + 1
        times.append(seconds_taken(record.started_at, record.completed_at))
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


# -- rehearsals with Prolific's test participants (issue 56) ---------------------------------------------
#: Where a batch's rehearsal is recorded: ``Batch.provider_options[REHEARSAL_KEY]``
#: (``platforms.prolific.rehearsal.services`` writes it).
REHEARSAL_KEY = "rehearsal"


def rehearsal_of(batch: Batch) -> dict:
    """What is recorded of the batch's rehearsal (empty when none was asked for)."""
    return dict((batch.provider_options or {}).get(REHEARSAL_KEY) or {})


def rehearsal_study_id(batch: Batch) -> str:
    """The id of the batch's test study, or ``""``."""
    return rehearsal_of(batch).get("study_id", "")

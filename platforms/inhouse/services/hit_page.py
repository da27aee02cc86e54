"""An annotator's HIT page: what it reads, their HIT (:func:`held_assignment`) and its queries, how many
HITs they answered and where they stand in the batch (:func:`answered_and_progress`), each in one
statement compiled once (``core.db.prepared``); and what its submit writes (:func:`submit_local_assignment`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.db import transaction
from django.db.models import (
    BooleanField,
    Exists,
    ExpressionWrapper,
    OuterRef,
    Q,
    QuerySet,
)
from django.utils import timezone

from annotation.crowd.services.answers import AlreadyRecorded, AnswerCheck, record_answers
from annotation.crowd.services.statuses import ANSWERED, settle_hit_status
from annotation.models import Assignment, Batch, Hit, HitQuery, Provider, Worker
from core.db.prepared import Prepared, PreparedUpdate
from core.errors import ServiceError
from core.models import scope_of
from platforms.inhouse.selectors import DONE
from platforms.inhouse.services.annotators import in_annotators, worker_in_annotators
from platforms.inhouse.services.handout import (
    TAKES_ANSWERS,
    CountOf,
    NotAnnotator,
    NotOpenToWorker,
    places_held,
    timed_out,
)
from platforms.inhouse.services.team_access import assignment_open, batch_open_to, is_open_to


def answered_count(user, *, worker_id: int | None = None) -> int:
    """How many HITs the annotator has submitted (whatever their review); ``worker_id`` when known."""
    mine = Q(worker_id=worker_id) if worker_id is not None else Q(worker__identity__user=user)
    return Assignment.objects.filter(mine, status__in=DONE).count()


#: Counted at most this far for "left for you": a bounded read whatever the batch's size.
PROGRESS_COUNT_LIMIT = 1000


@dataclass(frozen=True)
class HitProgress:
    """Where an annotator stands in a batch ("HIT 3 of 20 · 17 left"): ``number`` counts their submitted HITs of
    it plus this one, ``left`` its other open HITs they have not done, up to ``PROGRESS_COUNT_LIMIT``."""

    number: int
    left: int
    left_is_lower_bound: bool = False

    @property
    def total(self) -> int:
        return self.number + self.left


def answered_and_progress(assignment: Assignment) -> tuple[int, HitProgress]:
    """``answered_count`` and the assignment's :class:`HitProgress` in one statement with the worker, batch and
    HIT as parameters, so the database plans each count for them (along the (worker, status) index)."""
    (counts,) = _progress_counts(
        hit_id=assignment.hit_id, worker_id=assignment.worker_id, batch_id=assignment.hit.batch_id
    )
    answered, before, left = counts["answered"], counts["before"], counts["left"]
    progress = HitProgress(number=before + 1, left=left, left_is_lower_bound=left >= PROGRESS_COUNT_LIMIT)
    return answered, progress


def _progress_counts_rows(hit_id: int, worker_id: int, batch_id: int) -> QuerySet:
    done = Assignment.objects.filter(worker_id=worker_id, status__in=DONE).order_by()
    mine = Assignment.objects.filter(hit=OuterRef("pk"), worker_id=worker_id)
    # In position order, along the (batch, status, position) index (unordered, PostgreSQL scanned every HIT).
    left = (
        Hit.objects.filter(batch_id=batch_id, status=Hit.Status.OPEN)
        .exclude(pk=hit_id)
        .filter(~Exists(mine))
        .order_by("position")
        .values("pk")[:PROGRESS_COUNT_LIMIT]
    )
    return (
        Hit.objects.filter(pk=hit_id)
        .order_by()  # one row: without the model's ordering, which joined the batch to sort it
        .annotate(
            answered=CountOf(done.values("pk")),
            before=CountOf(done.filter(hit__batch_id=batch_id).values("pk")),
            left=CountOf(left),
        )
        .values("answered", "before", "left")
    )


#: :func:`answered_and_progress`'s statement, compiled once (``core.db.prepared``).
_progress_counts = Prepared(_progress_counts_rows, scope=scope_of)


def held_assignment(pk: int, user_id: int) -> Assignment | None:
    """The account's assignment ``pk`` with its HIT and batch, ``open`` (its batch still open to them) and
    ``annotator`` (still in the group); ``None`` when it is not theirs."""
    found = _held_assignment(pk=pk, user_id=user_id)
    return found[0] if found else None


def _held_assignment_rows(pk: int, user_id: int) -> QuerySet:
    return (
        Assignment.objects.select_related("hit__batch")
        .annotate(
            open=ExpressionWrapper(assignment_open(), output_field=BooleanField()), annotator=in_annotators(user_id)
        )
        .filter(pk=pk, worker__identity__user_id=user_id)
        .order_by()  # one row at most: no sort
    )


_held_assignment = Prepared(_held_assignment_rows, scope=scope_of)


def hit_queries_of(hit: Hit) -> list[HitQuery]:
    """The HIT's queries in order, each with its batch query (and ``hit`` known): compiled once."""
    rows = _hit_queries(hit_id=hit.pk)
    for row in rows:
        HitQuery.hit.field.set_cached_value(row, hit)
    return rows


_hit_queries = Prepared(
    lambda hit_id: HitQuery.objects.filter(hit_id=hit_id).select_related("batch_query").order_by("position"),
    scope=scope_of,
)


def submit_local_assignment(
    assignment: Assignment,
    answers: Mapping[str, str],
    *,
    hit_queries: Sequence[HitQuery] | None = None,
    count_answered: bool = False,
    current: bool = False,
) -> AnswerCheck:
    """Record an annotator's answers to a HIT they were given, once (late: while it has a free place); one
    conditional ``UPDATE``, so a second submit, or one after leaving the team, records nothing.
    ``count_answered``: count the worker's submitted HITs too; ``current``: read in this request."""
    if not current:
        assignment = Assignment.objects.select_related("hit__batch").get(pk=assignment.pk)
    now = timezone.now()
    try:
        with transaction.atomic():
            return _submit(assignment, answers, now, hit_queries=hit_queries, count_answered=count_answered)
    except AlreadyRecorded:
        # Nothing written: a query or two, on this refusal only, tell why.
        batch = assignment.hit.batch
        if batch.provider == Provider.LOCAL and not _worker_is_annotator(assignment.worker_id):
            raise NotAnnotator("you are no longer an annotator: your answers were not recorded") from None
        if not is_open_to(batch, assignment.worker_id):
            raise NotOpenToWorker(batch) from None
        raise


def _worker_is_annotator(worker_id: int) -> bool:
    return Worker.objects.filter(pk=worker_id).filter(worker_in_annotators(worker_id)).exists()


def _submit_counts_rows(hit_id: int, worker_id: int, batch_id: int) -> QuerySet:
    """In one statement: the HIT's answered assignments, the worker's done HITs, and those of this batch."""
    done = Assignment.objects.filter(worker_id=worker_id, status__in=DONE).order_by()
    answered = Assignment.objects.filter(hit_id=hit_id, status__in=ANSWERED).order_by()
    return (
        Hit.objects.filter(pk=hit_id)
        .order_by()  # one row: without the model's ordering, which joined the batch to sort it
        .annotate(
            this_hit=CountOf(answered.values("pk")),
            worker=CountOf(done.values("pk")),
            in_batch=CountOf(done.filter(hit__batch_id=batch_id).values("pk")),
        )
        .values("this_hit", "worker", "in_batch")
    )


_submit_counts = Prepared(_submit_counts_rows, scope=scope_of)


def _answer_write_rows(pk: int, batch_id: int, worker_id: int, *, annotator: bool) -> QuerySet:
    """The submit's conditional UPDATE's rows: the assignment while it takes answers, its batch open to the
    worker and (``annotator``: an in-house batch) its worker still an annotator."""
    still_open = batch_open_to(batch_id, worker_id)
    if annotator:
        still_open &= worker_in_annotators(worker_id)
    return Assignment.objects.filter(pk=pk, status__in=list(TAKES_ANSWERS)).filter(still_open)


#: The submit's UPDATE, compiled once (compiling cost more than running it); keyed by ``annotator``.
_answer_write = {
    annotator: PreparedUpdate(
        lambda pk, batch_id, worker_id, annotator=annotator: _answer_write_rows(
            pk, batch_id, worker_id, annotator=annotator
        ),
        scope=scope_of,
    )
    for annotator in (False, True)
}


def _submit(assignment: Assignment, answers, now, *, hit_queries, count_answered: bool) -> AnswerCheck:
    hit, batch = assignment.hit, assignment.hit.batch
    if timed_out(assignment, batch, now):
        if places_held(hit, now - batch.assignment_duration) >= hit.max_assignments:
            raise ServiceError(
                "the time for this HIT ran out and others have taken its places; your answers were not recorded"
            )
    elif assignment.status != Assignment.Status.ASSIGNED:
        raise ServiceError("this HIT was already submitted")
    if batch.status != Batch.Status.PUBLISHED:
        raise ServiceError("this batch is no longer open")
    raw = json.dumps(dict(answers), sort_keys=True)
    write = _answer_write[batch.provider == Provider.LOCAL]
    check = record_answers(
        assignment,
        answers,
        raw,
        hit_queries=hit_queries,
        write=lambda columns: write(columns, pk=assignment.pk, batch_id=batch.pk, worker_id=assignment.worker_id),
    )
    if count_answered:
        (counts,) = _submit_counts(hit_id=hit.pk, worker_id=assignment.worker_id, batch_id=batch.pk)
        check.answered_count, check.hit_number = counts["worker"], counts["in_batch"]
        settle_hit_status(hit, answered=counts["this_hit"])
    else:
        settle_hit_status(hit)
    return check

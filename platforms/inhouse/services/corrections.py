"""An annotator corrects the HIT they submitted last, within ``ANSWER_CORRECTION_SECONDS``, while none
of its answers has been **used** (read to decide something) since it was submitted, in its batch or
the one it adds to: reviewed (or its pay decided elsewhere: :func:`refuse_when`), escalated, exported,
ruled on, read by an ``AnswerUse``, bonused, such a use under way, its batch closed, or another HIT
submitted since (:func:`why_not_correctable`).

It runs under its batches' row lock, which every use passes before it reads: no use ever reads an
answer that is then corrected. Gold answers keep their first value (else a worker told which were
wrong would copy the right ones in); ``submitted_at`` is kept, so correcting never extends the window.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping, Sequence

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.crowd.services.answers import AnswerCheck, record_answers
from annotation.crowd.services.locking import lock_batches, use_under_way
from annotation.models import (
    Adjudication,
    AnswerUse,
    Assignment,
    Batch,
    BonusPayment,
    Escalation,
    Export,
    HitQuery,
    Judgment,
)
from core.errors import ServiceError
from platforms.inhouse.selectors import DONE

#: Why another platform says an assignment's answers were used (its pay decided there: Prolific's
#: ``ProlificSubmission``), or None: each registered by that platform's app (:func:`refuse_when`).
_DECIDED_ELSEWHERE: list[Callable[[Assignment], str | None]] = []


def refuse_when(check: Callable[[Assignment], str | None]) -> None:
    """A platform whose participants work through this hand-out refuses a correction when ``check``
    names a reason (called at its app's ``ready()``)."""
    if check not in _DECIDED_ELSEWHERE:
        _DECIDED_ELSEWHERE.append(check)


class NotCorrectable(ServiceError):
    """The HIT can no longer be corrected; the message says why."""


def correction_window() -> dt.timedelta:
    return dt.timedelta(seconds=settings.ANSWER_CORRECTION_SECONDS)


def why_not_correctable(assignment: Assignment, now: dt.datetime | None = None) -> str | None:
    """Why ``assignment`` (read with its HIT and batch) cannot be corrected now, for its annotator; or ``None``."""
    now = now or timezone.now()
    submitted = assignment.submitted_at
    if assignment.status != Assignment.Status.SUBMITTED or submitted is None:
        if assignment.status in (Assignment.Status.APPROVED, Assignment.Status.REJECTED):
            return "this HIT was already reviewed"
        return "this HIT has not been submitted"
    window = correction_window()
    if not window or now - submitted > window:
        return "the time to correct this HIT has run out"
    batch = assignment.hit.batch
    if batch.status != Batch.Status.PUBLISHED:
        return "its batch is closed"
    later = Assignment.objects.filter(worker_id=assignment.worker_id, status__in=DONE, submitted_at__gt=submitted)
    if later.exists():
        return "you have submitted another HIT since: only the last one can be corrected"
    return _used(assignment, batch, submitted)


def _batches(batch: Batch) -> list[int]:
    """The batches whose figures read ``batch``'s answers: itself and the batch they add to."""
    return [batch.pk] + ([batch.parent_id] if batch.parent_id else [])


def _used(assignment: Assignment, batch: Batch, submitted: dt.datetime) -> str | None:
    """Why the assignment's answers count as used (the module's docstring), or ``None``."""
    batches = _batches(batch)
    under_way = use_under_way(batches)
    if under_way is not None:
        return f"its answers are being used right now ({under_way[:1].lower()}{under_way[1:]})"
    for check in _DECIDED_ELSEWHERE:
        reason = check(assignment)
        if reason is not None:
            return reason
    if Escalation.objects.filter(batch_id__in=batches, created__gte=submitted).exists():
        return "its answers were already used (an escalation of the batch)"
    qids = HitQuery.objects.filter(hit_id=assignment.hit_id, batch_query__is_gold=False).values("batch_query__qid")
    ruled = Adjudication.objects.filter(
        batch_query__batch_id__in=batches, batch_query__qid__in=qids, decided_at__gte=submitted
    )
    if ruled.exists():
        return "its answers were already used (a researcher's ruling)"
    if Export.objects.filter(batch_id__in=batches, created__gte=submitted).exists():
        return "its answers were already used (an export)"
    use = AnswerUse.objects.filter(batch_id__in=batches, created__gte=submitted).order_by("created").first()
    if use is not None:  # a report on its labels, a dataset, a paper bundle, a routing, a label-sensitivity run
        return f"its answers were already used ({use.action[:1].lower()}{use.action[1:]})"
    participant = assignment.worker.identity.external_id
    bonus = Q(assignment_id=assignment.pk) | Q(batch_id__in=batches, participant_id=participant)
    if BonusPayment.objects.filter(bonus, created__gte=submitted).exists():
        return "its answers were already used (a bonus)"
    return None


def last_correctable(worker_id: int) -> Assignment | None:
    """The worker's last submitted assignment if it can still be corrected, else ``None`` (their home page)."""
    if not correction_window():
        return None
    rows = Assignment.objects.filter(worker_id=worker_id, status__in=DONE, submitted_at__isnull=False)
    last = rows.select_related("hit__batch", "worker__identity").order_by("-submitted_at", "-pk").first()
    return last if last is not None and why_not_correctable(last) is None else None


def current_answers(assignment: Assignment) -> dict[str, str]:
    """The assignment's stored answers as the HIT form's fields (``q-<position>`` -> label)."""
    positions = dict(HitQuery.objects.filter(hit_id=assignment.hit_id).values_list("batch_query_id", "position"))
    return {
        f"q-{positions[bq]}": label
        for bq, label in Judgment.objects.filter(assignment=assignment).values_list("batch_query_id", "label")
        if label and bq in positions
    }


def _gold_kept(assignment: Assignment, answers: Mapping[str, str]) -> dict[str, str]:
    """``answers`` with each gold question's field set back to what was first answered (or left out)."""
    kept = dict(answers)
    gold = HitQuery.objects.filter(hit_id=assignment.hit_id, batch_query__is_gold=True).values_list(
        "position", "batch_query_id"
    )
    first = dict(
        Judgment.objects.filter(assignment=assignment, batch_query__is_gold=True).values_list("batch_query_id", "label")
    )
    for position, bq in gold:
        field = f"q-{position}"
        if first.get(bq):
            kept[field] = first[bq]
        else:
            kept.pop(field, None)
    return kept


def correct_assignment(
    assignment: Assignment, answers: Mapping[str, str], *, hit_queries: Sequence[HitQuery] | None = None
) -> AnswerCheck | None:
    """Replace the judgments of a submitted, unused assignment by ``answers``; ``None`` when nothing changed;
    :class:`NotCorrectable` (409) naming why. Every condition is read again under the locks."""
    with transaction.atomic():
        batch = assignment.hit.batch
        lock_batches(_batches(batch))  # the users' lock (the module's docstring)
        locked = (
            Assignment.objects.select_for_update(of=("self",))
            .select_related("hit__batch", "worker__identity")
            .get(pk=assignment.pk)
        )
        reason = why_not_correctable(locked)
        if reason is not None:
            raise NotCorrectable(f"This HIT cannot be corrected: {reason}.")
        answers = _gold_kept(locked, answers)
        raw = json.dumps(answers, sort_keys=True)
        if locked.raw_answer == raw:
            return None  # the same answers again: a repeated post changes nothing
        Judgment.objects.filter(assignment=locked).delete()
        # Reset what only a failed gold check writes, so a correction that now passes carries no old feedback.
        Assignment.objects.filter(pk=locked.pk).update(feedback="")
        locked.feedback = ""
        check = record_answers(
            locked,
            answers,
            raw,
            submitted_at=locked.submitted_at,
            hit_queries=hit_queries,
            only_from=(Assignment.Status.SUBMITTED,),
        )
    for name in ("raw_answer", "valid", "gold_correct", "gold_total", "gold_passed", "feedback"):
        setattr(assignment, name, getattr(locked, name))
    return check

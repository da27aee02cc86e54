"""Checking, recording and reviewing one worker's answers to one HIT, fetched or posted alike: an answer
missing or not a category is kept as an invalid judgment with its reason, never guessed."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.crowd.providers import CrowdProvider
from annotation.models import Assignment, BatchQuery, HitQuery, Judgment
from core.db import insert_few_rows
from core.errors import ServiceError
from genderbias.labels import LABEL_NAMES, LABELS
from genderbias.numbers import NumberError, parse_count

#: What the HIT page's script (``static/js/hand_signals.js``) posts per query as ``<name>-<position>``,
#: with its ``Judgment`` column and bound: how an answer was given, so that copying a chatbot's label
#: can be found (``genderbias.machine.echo``).
HAND_SIGNALS = (
    ("pastes", "pastes", 1000),
    ("leaves", "tab_leaves", 1000),
    ("ms", "item_ms", 24 * 3600 * 1000),
)


@dataclass
class AnswerCheck:
    """Per query of the HIT: ``(batch_query, label or None, invalid reason)``; gold scored."""

    judgments: list[tuple[BatchQuery, str | None, str]] = field(default_factory=list)
    gold_correct: int = 0
    gold_total: int = 0
    gold_passed: bool | None = None
    gold_misses: list[tuple[BatchQuery, str | None]] = field(default_factory=list)
    #: Per judgment, in the same order: its hand signals (:func:`hand_signals`).
    signals: list[tuple[int | None, ...]] = field(default_factory=list)
    #: The worker's submitted HITs after this one, when the submit was asked to count them.
    answered_count: int | None = None
    #: This HIT's number among the worker's HITs of its batch ("HIT 3 of 20"), likewise.
    hit_number: int | None = None

    @property
    def valid(self) -> bool:
        return all(label is not None for _, label, _ in self.judgments)

    @property
    def invalid_count(self) -> int:
        return sum(label is None for _, label, _ in self.judgments)


class AlreadyRecorded(ServiceError):
    """The assignment was no longer in a status that takes answers when they were to be recorded."""


#: The reason :func:`check_answers` gives when the provider's answer document could not be read.
UNREADABLE = "unreadable answer"
#: Sent with the approval of work whose answer document could not be read (see review_assignment).
UNREADABLE_FEEDBACK = (
    "Thank you. Your answers reached us in a form we could not read, which is not your fault: "
    "the HIT is approved and paid in full."
)


def hand_signals(answers: Mapping[str, str], position: int) -> tuple[int | None, ...]:
    """The hand signals posted for the query at ``position`` (:data:`HAND_SIGNALS` order); one absent or
    out of range is unknown (``None``) and the answer still recorded: the worker never saw the field."""
    values = []
    for name, _column, most in HAND_SIGNALS:
        raw = answers.get(f"{name}-{position}")
        try:
            values.append(None if raw in (None, "") else parse_count(raw, f"{name}-{position}", maximum=most))
        except NumberError:
            values.append(None)
    return tuple(values)


def check_answers(
    hit_queries: Sequence[HitQuery], answers: Mapping[str, str] | None, gold_pass_fraction: float
) -> AnswerCheck:
    """Read ``q-<position>`` fields: one of n/f/m/o is a label, anything else an invalid judgment
    (``answers=None``: the provider's answer document could not be read at all)."""
    check = AnswerCheck()
    missing = UNREADABLE if answers is None else "missing answer"
    answers = answers or {}
    for hq in hit_queries:
        raw = answers.get(hq.field_name)
        value = (raw or "").strip().lower()
        if not value:
            label, reason = None, missing
        elif value not in LABELS:
            label, reason = None, f"unknown category {raw!r}"[:200]
        else:
            label, reason = value, ""
        check.judgments.append((hq.batch_query, label, reason))
        check.signals.append(hand_signals(answers, hq.position))
        if hq.batch_query.is_gold:
            check.gold_total += 1
            if label == hq.batch_query.gold_label:
                check.gold_correct += 1
            else:
                check.gold_misses.append((hq.batch_query, label))
    if check.gold_total and check.invalid_count < len(check.judgments):
        # Only when some answer was given: an empty or unreadable one is reviewed as such, not as failed gold.
        needed = math.ceil(gold_pass_fraction * check.gold_total - 1e-9)
        check.gold_passed = check.gold_correct >= needed
    return check


#: At most this many wrong gold answers are spelled out in one message (MTurk caps feedback length).
FEEDBACK_MISSES = 5


def gold_feedback(check: AnswerCheck, *, name_questions: bool = True) -> str:
    """What a worker who failed the gold questions is told: how many were wrong and, unless
    ``name_questions`` is false, which ones and their right answers, so they can do better."""
    missed = check.gold_total - check.gold_correct
    text = f"{missed} of the {check.gold_total} check question(s) with a known answer were answered wrongly"
    if not name_questions or not check.gold_misses:
        return text + "."
    details = []
    for bq, given in check.gold_misses[:FEEDBACK_MISSES]:
        answer = LABEL_NAMES[given] if given else "nothing"
        details.append(f'"{bq.text[:100]}" is {LABEL_NAMES[bq.gold_label]}, you answered {answer}')
    return text + ": " + "; ".join(details) + "."


@transaction.atomic(savepoint=False)  # its callers hold their own transaction or savepoint
def record_answers(
    assignment: Assignment,
    answers: Mapping[str, str] | None,
    raw_answer: str,
    *,
    status: str = Assignment.Status.SUBMITTED,
    submitted_at: dt.datetime | None = None,
    hit_queries: Sequence[HitQuery] | None = None,
    only_from: Collection[str] | None = None,
    only_if: Q | None = None,
    write: Callable[[dict], int] | None = None,
) -> AnswerCheck:
    """Store the judgments of a not-yet-answered assignment and score its gold questions, writing only
    the answer's columns (never another request's with an old value).

    ``hit_queries``: the HIT's queries in order, if read already. ``only_from`` (and ``only_if``, no
    join): record only if the row still is in one of these statuses, else :class:`AlreadyRecorded`
    with nothing written; one ``UPDATE`` first, so of two submits the second waits, then records
    nothing. ``write``: the caller's prepared conditional ``UPDATE`` instead (answers rows changed).
    """
    if hit_queries is None:
        hit_queries = list(assignment.hit.hit_queries.select_related("batch_query").order_by("position"))
    batch = assignment.hit.batch
    check = check_answers(hit_queries, answers, batch.gold_pass_fraction)
    values = {
        "status": status,
        "submitted_at": submitted_at or timezone.now(),
        "raw_answer": raw_answer,
        "valid": check.valid,
        "gold_correct": check.gold_correct if check.gold_total else None,
        "gold_total": check.gold_total or None,
        "gold_passed": check.gold_passed,
    }
    if check.gold_passed is False:
        values["feedback"] = gold_feedback(check, name_questions=batch.gold_feedback)
    if write is not None:
        changed = write(values)
    else:
        row = Assignment.objects.filter(pk=assignment.pk)
        if only_from is not None:
            # Not through a join: PostgreSQL re-checks the row after the wait, not a subquery's rows.
            row = row.filter(status__in=list(only_from))
        if only_if is not None:
            row = row.filter(only_if)
        changed = row.update(**values)
    if not changed:
        raise AlreadyRecorded("this HIT was already submitted")
    for name, value in values.items():
        setattr(assignment, name, value)
    insert_few_rows(  # bulk_create without its per-call compile (the HIT cycle)
        Judgment,
        ("assignment_id", "batch_query_id", "label", "invalid_reason", *(column for _, column, _ in HAND_SIGNALS)),
        [
            (assignment.pk, bq.pk, label, reason, *signals)
            for (bq, label, reason), signals in zip(check.judgments, check.signals, strict=True)
        ],
    )
    return check


def invalid_feedback(judgments: Sequence[Judgment]) -> str:
    """What a worker whose HIT has missing or invalid answers is told: how many, which (a few) and what
    a usable answer is, so the rejection is understood."""
    invalid = [j for j in judgments if j.label is None]
    if len(invalid) == len(judgments):
        return (
            f"This HIT was submitted without a usable answer to any of its {len(judgments)} queries, "
            "so there is no work to pay for. Each query needs one of the categories "
            f"{', '.join(LABEL_NAMES.values())}."
        )
    details = []
    for judgment in invalid[:FEEDBACK_MISSES]:
        text = judgment.batch_query.text[:100]
        reason = "no answer" if judgment.invalid_reason.startswith("missing") else "an answer that is not a category"
        details.append(f'"{text}": {reason}')
    more = f" and {len(invalid) - FEEDBACK_MISSES} more" if len(invalid) > FEEDBACK_MISSES else ""
    return (
        f"{len(invalid)} of the {len(judgments)} queries of this HIT {'was' if len(invalid) == 1 else 'were'} "
        "left without a usable answer "
        f"({'; '.join(details)}{more}). Each query needs one of the categories "
        f"{', '.join(LABEL_NAMES.values())}; a HIT with a query left out cannot be used."
    )


def review_assignment(assignment: Assignment, provider: CrowdProvider, *, approve_all: bool = False) -> str:
    """Approve or reject a submitted assignment once; returns ``approved``, ``rejected`` or ``kept``.
    Rejected with feedback: failed gold, and invalid work where ``provider.rejects_invalid``; approved:
    an unreadable answer document (not the worker's fault); kept: other invalid work. ``approve_all``
    approves everything (gold found ambiguous)."""
    if assignment.status != Assignment.Status.SUBMITTED:
        return "kept"
    feedback = assignment.feedback
    if assignment.gold_passed is False and not approve_all:
        outcome = Assignment.Status.REJECTED
    elif assignment.valid or approve_all:
        outcome = Assignment.Status.APPROVED
    elif assignment.valid is False and provider.rejects_invalid:
        judgments = list(assignment.judgments.select_related("batch_query").order_by("pk"))
        if all(j.invalid_reason == UNREADABLE for j in judgments if j.label is None):
            feedback = UNREADABLE_FEEDBACK
            outcome = Assignment.Status.APPROVED
        else:
            feedback = invalid_feedback(judgments)
            outcome = Assignment.Status.REJECTED
    else:
        return "kept"
    if outcome == Assignment.Status.REJECTED:
        provider.reject(assignment, feedback)
    else:
        provider.approve(assignment, feedback if feedback == UNREADABLE_FEEDBACK else "")
    Assignment.objects.filter(pk=assignment.pk).update(status=outcome, reviewed_at=timezone.now(), feedback=feedback)
    assignment.status, assignment.feedback = outcome, feedback
    return str(outcome)

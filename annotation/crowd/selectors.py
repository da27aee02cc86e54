"""Reads of the crowd batch's life cycle: batches, their progress and what they have cost.

Read-only: nothing here changes state (the writes are in :mod:`.services`).
"""

from __future__ import annotations

import contextlib
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import Count, Max, Q, QuerySet, Sum

from annotation.crowd.costs import Spent, spent_on
from annotation.crowd.providers.base import provider_class
from annotation.models import Assignment, Batch, BatchQuery, BonusPayment, Hit, Judgment


def batches() -> QuerySet[Batch]:
    """Every batch, for other apps' shells to look one up (``get_object_or_404(batches(), name=...)``)."""
    return Batch.objects.all()


# -- what counts as answered and as charged: one rule for every figure (issue 45) -------------------
# Work that failed its gold questions is rejected by the next sync (unless the researcher approves
# everything): counted as answered before the sync and not after, a page showed 81/81 and $6.48,
# then 68/81 and $5.44 with no new work. It counts as answered nowhere, from the moment it is
# submitted; it is charged only once approved (``approve_all``). The same for invalid work (``valid``
# false: a query left without an answer, or answered with something that is not a category, as an
# answer document read from MTurk or Task Builder can be): a platform that rejects invalid work
# (``rejects_invalid``) rejects it at the next sync, so it counts as answered nowhere either and is
# charged only once approved (an unreadable answer document, the platform's fault, is approved).
#: Answered: submitted or approved, not failed on its gold questions, not invalid (its judgments count).
ANSWERED_WORK = (
    Q(status__in=[Assignment.Status.SUBMITTED, Assignment.Status.APPROVED]) & ~Q(gold_passed=False) & ~Q(valid=False)
)
#: Charged by the platform: approved, or submitted, not failed on its gold questions and not invalid (to be approved).
CHARGED_WORK = Q(status=Assignment.Status.APPROVED) | (
    Q(status=Assignment.Status.SUBMITTED) & ~Q(gold_passed=False) & ~Q(valid=False)
)


def is_answered(status: str, gold_passed: bool | None, valid: bool | None = None) -> bool:
    """:data:`ANSWERED_WORK` for one assignment's status, gold outcome and validity (the counts' own loop)."""
    answered = status in (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED)
    return answered and gold_passed is not False and valid is not False


def is_charged(status: str, gold_passed: bool | None, valid: bool | None = None) -> bool:
    """:data:`CHARGED_WORK` for one assignment's status, gold outcome and validity."""
    to_approve = status == Assignment.Status.SUBMITTED and gold_passed is not False and valid is not False
    return status == Assignment.Status.APPROVED or to_approve


def crowd_batch_ids(batch: Batch) -> list[int]:
    """Where ``batch``'s crowd answers are: the batch itself and, for a batch labelled by a machine
    first, its derived batches (calibration sample, routed queries; not cancelled ones).

    A derived batch holds a subset of its parent's queries under the same qids, so the
    parent reads its children's judgments, rulings, gold failures and annotators as its own:
    its agreement, review, exports, team and label sensitivity cover every query the crowd labelled.
    """
    derived = Batch.objects.filter(parent=batch).exclude(status=Batch.Status.CANCELLED).values_list("pk", flat=True)
    return [batch.pk, *derived]


def answered_per_hit(hit_ids: list[int]) -> dict[int, int]:
    """Each HIT's answered assignments (:data:`ANSWERED_WORK`; rejected, returned and failed work not),
    for the HITs table: its "Answered" is never more than its places."""
    rows = (
        Assignment.objects.filter(ANSWERED_WORK, hit__in=hit_ids)
        .values("hit")
        .annotate(n=Count("pk"))
        .values_list("hit", "n")
        .order_by()
    )
    return dict(rows)


def failed_gold_work(batch: Batch) -> QuerySet[Assignment]:
    """Work that failed the gold questions, in ``batch`` and its crowd batches (:func:`crowd_batch_ids`),
    with the reason the worker was given: the batch page's list, as many as its count says."""
    return (
        Assignment.objects.filter(hit__batch__in=crowd_batch_ids(batch), gold_passed=False)
        .select_related("hit__batch", "worker")
        .order_by("hit__batch_id", "hit__position", "pk")
    )


def query_texts(batch: Batch | int, qids) -> dict[str, str]:
    """The text of each of ``qids`` among ``batch``'s real queries (not gold), for a page that shows a
    query id: every id is shown with its text (issue 45; ``core/_query_text.html``)."""
    wanted = {str(qid) for qid in qids}
    if not wanted:
        return {}
    rows = BatchQuery.objects.filter(batch=batch, is_gold=False, qid__in=wanted).values_list("qid", "text")
    return dict(rows)


def batch_progress(
    batch: Batch,
    judged: dict[str, int | None] | None = None,
    assignments: dict[str, Any] | None = None,
    *,
    counts: dict[str, Any] | None = None,
) -> dict[str, int | float | None]:
    """Counts for the batch page, its live fragment (polled every 2 s), the API and the commands,
    read by :func:`answer_counts` (kept per change of what they count, on SQLite), none reading a
    judgment row; ``judged`` and ``assignments``: its :func:`judgment_counts` and
    :func:`assignment_counts` of ``batch`` when the caller read them already; ``counts``: its
    :func:`answer_counts`, likewise."""
    counts = counts if counts is not None else answer_counts([batch.pk])
    work = assignments if assignments is not None else counts["assignments"]
    judgments = judged if judged is not None else counts["judged"]
    hits, queries = counts["hits"], counts["queries"]
    expected = hits["expected"] or 0
    submitted, approved = work["status_submitted"], work["status_approved"]
    answered = work["usable"]
    return {
        "hits": hits["total"],
        "hits_published": hits["published"],
        "assignments_expected": expected,
        "assigned": work["status_assigned"],
        "submitted": submitted,
        "approved": approved,
        "rejected": work["status_rejected"],
        # The one answered figure (ANSWERED_WORK), what is charged (CHARGED_WORK) and the gold failures.
        "answered": answered,
        "charged": work["charged"],
        "failed_gold": work["failed_gold"],
        "judgments": judgments["n"],
        "invalid_judgments": judgments["n"] - judgments["labelled"],
        "fraction": min(1.0, answered / expected) if expected else None,
        "queries": queries["every"] - queries["gold"],
        "gold_queries": queries["gold"],
    }


def gold_left_out(batch: Batch) -> int:
    """How many of ``batch``'s gold queries are queries of its query set, left out of its queries
    (``create_batch``: a study's own file may be the gold of a pool drawn from it)."""
    if batch.query_set_id is None:
        return 0
    gold = batch.queries.filter(is_gold=True).values("qid")
    return batch.query_set.queries.filter(qid__in=gold).count()


# -- the counts of what a batch's answers are, kept per change on SQLite (issue 31) ----------------
#: On SQLite, triggers add one to this table's single row on every INSERT, UPDATE and DELETE of the
#: tables the counts read (made after every migrate: :mod:`annotation.crowd.services.change_log`).
CHANGES = "annotation_answers_change"
COUNTED_TABLES = ("annotation_judgment", "annotation_assignment", "annotation_hit", "annotation_batchquery")


def trigger_name(table: str, operation: str) -> str:
    return f"answers_change_{table.removeprefix('annotation_')}_{operation}"


TRIGGERS = tuple(
    trigger_name(table, operation) for table in COUNTED_TABLES for operation in ("insert", "update", "delete")
)


def changes_stamp() -> tuple | None:
    """What moves with every committed write to the judgments, assignments, HITs and batch
    queries, read in O(1): the change counter that triggers move on every INSERT, UPDATE and
    DELETE, whatever the code that writes, and the token drawn at the last ``migrate``. SQLite
    writes one transaction at a time, so two committed states with the same stamp hold the same
    rows (a migration that rebuilds a table drops its triggers, and the ``migrate`` that ran it
    draws a new token at its end). None where that does not hold: another database, or a
    trigger missing (until the end of the ``migrate`` that dropped it)."""
    if connection.vendor != "sqlite":
        return None
    marks = ", ".join(["%s"] * len(TRIGGERS))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger' AND name IN ({marks})", TRIGGERS)
        if cursor.fetchone()[0] != len(TRIGGERS):
            return None
        cursor.execute(f'SELECT "token", "changes" FROM "{CHANGES}" WHERE "id" = 1')
        row = cursor.fetchone()
    return tuple(row) if row is not None else None


def _count(batch_ids: list[int]) -> dict[str, Any]:
    hits = Hit.objects.filter(batch__in=batch_ids).aggregate(
        total=Count("pk"),
        published=Count("pk", filter=~Q(provider_id=None)),
        expected=Sum("max_assignments"),
    )
    # Every query along the batch's index, the few gold ones along their partial index: no row read.
    queries = BatchQuery.objects.filter(batch__in=batch_ids)
    return {
        "judged": judgment_counts(batch_ids),
        "assignments": assignment_counts(batch_ids),
        "hits": hits,
        "queries": {"every": queries.count(), "gold": queries.filter(is_gold=True).count()},
    }


def answer_counts(batch_ids: list[int]) -> dict[str, Any]:
    """The counts of the batches ``batch_ids`` that their progress and their answers' version
    read: ``judged`` (:func:`judgment_counts`), ``assignments`` (:func:`assignment_counts`),
    ``hits`` (how many, published, assignments expected) and ``queries`` (``every``, ``gold``).

    Counting reads every judgment and assignment of the batches (150,000 and 15,000 at 50,000
    queries). On SQLite they are kept in the shared ``results`` cache under :func:`changes_stamp`
    and counted again only after a write to what they count (any batch's: the stamp is the
    database's); a value is kept only when the stamp did not move while it was counted, and
    never from inside a transaction of the caller (which might yet be rolled back). Counting
    takes no lock: annotators' writes never wait on it. Elsewhere, counted at each call.
    """

    from core.db import bounded_cache
    from core.version import code_key

    stamp = changes_stamp()
    if stamp is None or not settings.RESULTS_CACHE_SECONDS:
        return _count(batch_ids)
    # One generation per set of batches: a new stamp's counts replace the last ones (bounded_cache).
    generation = f"answer-counts:{'-'.join(map(str, batch_ids))}"

    def key(stamp: tuple) -> str:
        return f"{code_key()}:{generation}:{'-'.join(map(str, stamp))}"

    try:
        kept = bounded_cache.read("results", key(stamp))
    except DatabaseError:  # the cache's table not made yet: count
        kept = bounded_cache.MISSING
    if kept is not bounded_cache.MISSING:
        return kept
    if connection.in_atomic_block:
        return _count(batch_ids)  # the caller's transaction may hold writes it rolls back
    # Counted without a transaction of its own (one would take SQLite's write lock: every
    # annotator's write would wait on the count) and kept only if the stamp did not move while
    # counting: every write moves it in its own transaction, so nothing was committed between.
    counted = _count(batch_ids)
    if changes_stamp() == stamp:
        with contextlib.suppress(DatabaseError):  # not kept: counted again next time
            bounded_cache.store(
                "results",
                key(stamp),
                counted,
                max_bytes=settings.RESULTS_CACHE_MAX_BYTES,
                generation=generation,
                version="-".join(map(str, stamp)),
            )
    return counted


#: What :func:`annotation.results.selectors.labels.answers_version` reads of the assignments (its ``work``).
WORK_KEYS = ("n", "last", "usable", "approved", "submitted", "reviewed")


def assignment_counts(batch_ids: list[int]) -> dict[str, Any]:
    """One pass over the assignments of the batches ``batch_ids``: what the answers' version reads
    (:data:`WORK_KEYS`: how many, the largest id, how many usable (answered: :data:`ANSWERED_WORK`)
    and approved, the last submitted and reviewed), how many are in
    each status (``status_<status>``, the progress) and how many failed their gold questions
    (``failed_gold``: the batch page lists them only when there are any), and how many are charged
    (``charged``: :data:`CHARGED_WORK`, what :func:`spending` prices).

    The batch page and its live fragment read the assignments once for all three (three passes
    over a 50,000-query batch's 15,000 assignments before).
    """
    groups = (
        Assignment.objects.filter(hit__batch__in=batch_ids)
        .values_list("status", "gold_passed", "valid")
        .annotate(n=Count("*"), last=Max("id"), submitted=Max("submitted_at"), reviewed=Max("reviewed_at"))
        .order_by()
    )
    counts: dict[str, Any] = dict.fromkeys(("n", "usable", "charged", "approved", "failed_gold"), 0)
    counts |= {f"status_{status}": 0 for status in Assignment.Status.values}
    latest: dict[str, list] = {"last": [], "submitted": [], "reviewed": []}
    # One row per status, gold outcome and validity, summed here (what one aggregate per figure gave before).
    for status, gold_passed, valid, n, last, submitted, reviewed in groups:
        counts["n"] += n
        counts["usable"] += n if is_answered(status, gold_passed, valid) else 0
        counts["charged"] += n if is_charged(status, gold_passed, valid) else 0
        counts["approved"] += n if status == Assignment.Status.APPROVED else 0
        counts["failed_gold"] += n if gold_passed is False else 0
        if f"status_{status}" in counts:
            counts[f"status_{status}"] += n
        for key, value in (("last", last), ("submitted", submitted), ("reviewed", reviewed)):
            if value is not None:
                latest[key].append(value)
    return counts | {key: max(values) if values else None for key, values in latest.items()}


def judgment_counts(batch_ids: list[int]) -> dict[str, int | None]:
    """``n`` (judgments), ``last`` (their largest id) and ``labelled`` (not invalid) of the batches
    ``batch_ids``, read from indexes alone: along each batch's HITs and assignments, the
    judgments' index by assignment (ids only) and the partial index of the invalid ones.

    A judgment belongs to the batch of its query and of its assignment's HIT alike; counting
    through the assignments never reads a judgment row (through the queries, every one:
    9 ms against 1.7 ms for 15,000 judgments on SQLite).
    """
    judgments = Judgment.objects.filter(assignment__hit__batch__in=batch_ids)
    # COUNT(*), not COUNT(id): the same number (an id is never NULL) without reading each entry's id
    # for the count (18.7 against 14.5 ms for 150,000 judgments on SQLite).
    counts = judgments.aggregate(n=Count("*"), last=Max("id"))
    invalid = judgments.filter(label=None).count()
    return {"n": counts["n"], "last": counts["last"], "labelled": counts["n"] - invalid}


def spending(batch: Batch, answered: int | None = None) -> Spent:
    """What ``batch`` has spent on its platform, part by part (:func:`annotation.crowd.costs.spent_on`):
    its ``answered`` (charged: :data:`CHARGED_WORK`) assignments at the provider's price, fee included, and
    the bonuses sent (paid, or sent and unconfirmed: :func:`bonus_charges`), each charge with its fee.

    Priced by the provider's rules, never from the estimate recorded at creation (which holds the
    most the bonus rule could cost: counting it per assignment and the bonuses paid again counted
    them twice). Rejected and void work is not paid; extra assignments (escalations, re-offers)
    count once answered; work awaiting review counts as it is charged when approved (by a review
    or the platform's auto-approval), unless it failed its gold questions (the sync rejects it: counted
    before the sync, the figure fell after it with no new work). ``answered``: the charged count
    (:func:`batch_progress`'s ``charged``), counted here when not given.
    """
    if answered is None:
        answered = Assignment.objects.filter(CHARGED_WORK, hit__batch=batch).count()
    return spent_on(
        batch.provider,
        Decimal(batch.reward),
        answered,
        assignments_per_hit=batch.assignments_per_query,
        options=provider_class(batch.provider).options_of(batch),
        bonus_charges=bonus_charges(batch),
    )


def spent(batch: Batch, answered: int | None = None) -> Decimal:
    """USD ``batch`` has spent, fees and bonuses included: the one figure of the dashboard, the batch
    list and page, the dataset card and the methods text (:func:`spending`'s total)."""
    return spending(batch, answered).total


def bonus_charges(batch: Batch) -> list[list[Decimal]]:
    """The bonuses sent for ``batch`` (``BonusPayment`` paid, or paying: sent, unconfirmed) grouped as
    its platform charges them, each group with one fee: a Prolific bulk bonus (its set-up answers one
    ``fees`` for the bulk), each MTurk bonus (``SendBonus``: 20%, at least $0.01, per bonus), in-house
    all at once (no fee)."""
    rows = BonusPayment.objects.filter(
        batch=batch, state__in=[BonusPayment.State.PAID, BonusPayment.State.PAYING]
    ).values_list("pk", "bulk_id", "amount")
    charges = provider_class(batch.provider).bonus_charges
    if charges == "at_once":
        return [[amount for _, _, amount in rows]]
    groups: dict[object, list[Decimal]] = {}
    for pk, bulk_id, amount in rows:
        key = bulk_id if charges == "bulk" and bulk_id else pk
        groups.setdefault(key, []).append(amount)
    return list(groups.values())


def is_machine_labelled(batch: Batch) -> bool:
    """Whether ``batch`` is labelled by a machine first: its crowd work goes through derived batches
    (a calibration sample, routed queries) or a routing decided which machine labels stand.

    Such a batch is never published itself (:func:`annotation.crowd.services.publishing.check_publishable`) and
    its own cost estimate (every query to the crowd) is never spent.
    """
    return batch.parent_id is None and (batch.derived.exists() or batch.routings.exists())


def counts_answers(prefix: str = "") -> Q:
    """The one rule of whose answers count (results, agreement, exports, calibration): a condition on
    assignments, or through ``prefix`` on rows that reach one (``"assignment__"`` for judgments).

    Submitted or approved work that passed its gold check (or had none); and, in a batch whose
    researcher chose to keep them (``Batch.failed_gold_answers == "keep"``), the answers of work that
    failed its gold check, whether still awaiting its review or already rejected: the failure loses
    that HIT's pay (the review rejects it either way), not its other answers.
    """
    answered = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED)
    passed = Q(**{f"{prefix}status__in": answered}) & ~Q(**{f"{prefix}gold_passed": False})
    kept = Q(
        **{
            f"{prefix}gold_passed": False,
            f"{prefix}status__in": (*answered, Assignment.Status.REJECTED),
            f"{prefix}hit__batch__failed_gold_answers": "keep",
        }
    )
    return passed | kept


def place_takers(batch: Batch, hit_ids: list[int], *, retakes: bool = True) -> dict[int, int] | None:
    """How many annotators could still take a place on each of ``hit_ids`` of ``batch``: ``None`` for a
    batch open to anyone (no team); for a batch restricted to a team, its active members who are not
    blocked and have given no kept answer to that HIT: those who hold no assignment on it, and (a retake,
    :func:`retake_allowed`; ``retakes=False`` leaves them out) those whose every assignment on it was
    rejected for a failed gold check. A member never handed a HIT yet can take any. The one count of who
    is left to fill a team's places: the team's warning, escalation (never a place nobody can take),
    routing's wait (who is needed) and the hand-out (a retake only for places no fresh member can fill)
    read it."""
    from annotation.models import Worker

    if not batch.team.exists():
        return None
    team = batch.team.filter(is_active=True)
    members = list(Worker.objects.filter(identity__user__in=team, blocked=False).values_list("pk", flat=True))
    takers_in_all = team_size(batch)
    of_members = Q(assignments__worker__in=members)
    if retakes and retake_allowed(batch):
        # A member counts as done with the HIT while they hold an assignment on it that was not rejected.
        of_members &= ~Q(assignments__status=Assignment.Status.REJECTED)
    done = dict(
        Hit.objects.filter(pk__in=hit_ids)
        .annotate(done=Count("assignments__worker", filter=of_members, distinct=True))
        .values_list("pk", "done")
    )
    return {pk: max(0, takers_in_all - done.get(pk, 0)) for pk in hit_ids}


def team_size(batch: Batch) -> int | None:
    """The members of ``batch``'s team who may take its places (active, not blocked); ``None``: no team."""
    if not batch.team.exists():
        return None
    team = batch.team.filter(is_active=True)
    return team.count() - team.filter(annotation_identity__worker__blocked=True).count()


def retake_allowed(batch: Batch) -> bool:
    """Whether a member of ``batch``'s team whose work on a HIT was rejected (a failed gold check) may take
    that HIT again: an in-house batch with a team that does not keep failed work's answers
    (``Batch.failed_gold_answers``), so the rejected answers never count beside the retake's.
    The hand-out (``platforms.inhouse.services.handout``) offers a retake only for places no member who
    has not done the HIT can fill: the team of three completes its sample (issue 58)."""
    from annotation.models import Provider

    return batch.provider == Provider.LOCAL and batch.failed_gold_answers != "keep" and batch.team.exists()


def pay_figures(batch: Batch, done: QuerySet[Assignment]) -> dict[str, Any]:
    """What the batch's platform records of its pay (``CrowdProvider.pay_figures``), for the checklists."""
    return provider_class(batch.provider).pay_figures(batch, done)

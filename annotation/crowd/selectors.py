"""Reads of the crowd batch's life cycle: batches, their progress and what they have cost (writes: :mod:`.services`)."""

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


# -- one rule for every figure: work failing gold or invalid is rejected at the next sync, so it counts
# as answered nowhere from the start (else a figure falls with no new work) and is charged once approved.
#: Answered: submitted or approved, not failed on its gold questions, not invalid (its judgments count).
ANSWERED_WORK = (
    Q(status__in=[Assignment.Status.SUBMITTED, Assignment.Status.APPROVED]) & ~Q(gold_passed=False) & ~Q(valid=False)
)
#: Charged by the platform: approved, or submitted, not failed on its gold questions and not invalid (to be approved).
CHARGED_WORK = Q(status=Assignment.Status.APPROVED) | (
    Q(status=Assignment.Status.SUBMITTED) & ~Q(gold_passed=False) & ~Q(valid=False)
)


def crowd_batch_ids(batch: Batch) -> list[int]:
    """Where ``batch``'s crowd answers are: the batch and its derived batches not cancelled (they hold its
    queries under the same qids, so the parent reads their answers as its own)."""
    derived = Batch.objects.filter(parent=batch).exclude(status=Batch.Status.CANCELLED).values_list("pk", flat=True)
    return [batch.pk, *derived]


def answered_per_hit(hit_ids: list[int]) -> dict[int, int]:
    """Each HIT's answered assignments (:data:`ANSWERED_WORK`): never more than its places."""
    rows = (
        Assignment.objects.filter(ANSWERED_WORK, hit__in=hit_ids)
        .values("hit")
        .annotate(n=Count("pk"))
        .values_list("hit", "n")
        .order_by()
    )
    return dict(rows)


def failed_gold_work(batch: Batch) -> QuerySet[Assignment]:
    """Work that failed the gold questions in ``batch``'s crowd batches (:func:`crowd_batch_ids`)."""
    return (
        Assignment.objects.filter(hit__batch__in=crowd_batch_ids(batch), gold_passed=False)
        .select_related("hit__batch", "worker")
        .order_by("hit__batch_id", "hit__position", "pk")
    )


def query_texts(batch: Batch | int, qids) -> dict[str, str]:
    """The text of each of ``qids`` among ``batch``'s real queries: pages show every id with its text."""
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
    """Counts for the batch page, its live fragment, the API and the commands, from :func:`answer_counts`;
    ``judged``, ``assignments`` and ``counts``: those counts when the caller read them already."""
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
    """How many of ``batch``'s gold queries are also in its query set (a study's file may be its own gold)."""
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
    """The triggers' change counter and the last ``migrate``'s token, read in O(1): two committed states
    with the same stamp hold the same rows (SQLite writes one transaction at a time); None elsewhere."""
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
    queries = BatchQuery.objects.filter(batch__in=batch_ids)  # along indexes: no row read
    return {
        "judged": judgment_counts(batch_ids),
        "assignments": assignment_counts(batch_ids),
        "hits": hits,
        "queries": {"every": queries.count(), "gold": queries.filter(is_gold=True).count()},
    }


def answer_counts(batch_ids: list[int]) -> dict[str, Any]:
    """The counts of the batches ``batch_ids`` (``judged``, ``assignments``, ``hits``, ``queries``); on
    SQLite kept under :func:`changes_stamp`, only when the stamp held still while counting and never
    from inside the caller's transaction (it may roll back)."""
    from core.db import bounded_cache
    from core.version import code_key

    stamp = changes_stamp()
    if stamp is None or not settings.RESULTS_CACHE_SECONDS:
        return _count(batch_ids)
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
    # No transaction of its own: it would take SQLite's write lock and make annotators' writes wait.
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
    """One pass over the assignments of the batches ``batch_ids``: :data:`WORK_KEYS` (``usable``:
    :data:`ANSWERED_WORK`), ``status_<status>``, ``failed_gold`` and ``charged`` (:data:`CHARGED_WORK`)."""
    groups = (
        Assignment.objects.filter(hit__batch__in=batch_ids)
        .values_list("status", "gold_passed", "valid")
        .annotate(n=Count("*"), last=Max("id"), submitted=Max("submitted_at"), reviewed=Max("reviewed_at"))
        .order_by()
    )
    counts: dict[str, Any] = dict.fromkeys(("n", "usable", "charged", "approved", "failed_gold"), 0)
    counts |= {f"status_{status}": 0 for status in Assignment.Status.values}
    latest: dict[str, list] = {"last": [], "submitted": [], "reviewed": []}
    for status, gold_passed, valid, n, last, submitted, reviewed in groups:
        kept = gold_passed is not False and valid is not False  # ANSWERED_WORK and CHARGED_WORK, row by row
        approved = status == Assignment.Status.APPROVED
        counts["n"] += n
        counts["usable"] += n if kept and (approved or status == Assignment.Status.SUBMITTED) else 0
        counts["charged"] += n if approved or (kept and status == Assignment.Status.SUBMITTED) else 0
        counts["approved"] += n if approved else 0
        counts["failed_gold"] += n if gold_passed is False else 0
        if f"status_{status}" in counts:
            counts[f"status_{status}"] += n
        for key, value in (("last", last), ("submitted", submitted), ("reviewed", reviewed)):
            if value is not None:
                latest[key].append(value)
    return counts | {key: max(values) if values else None for key, values in latest.items()}


def judgment_counts(batch_ids: list[int]) -> dict[str, int | None]:
    """``n`` (judgments), ``last`` (their largest id) and ``labelled`` (not invalid) of the batches
    ``batch_ids``, from indexes alone: counted through the assignments (through the queries would
    read every judgment row); COUNT(*) reads no id."""
    judgments = Judgment.objects.filter(assignment__hit__batch__in=batch_ids)
    counts = judgments.aggregate(n=Count("*"), last=Max("id"))
    invalid = judgments.filter(label=None).count()
    return {"n": counts["n"], "last": counts["last"], "labelled": counts["n"] - invalid}


def spending(batch: Batch, answered: int | None = None) -> Spent:
    """What ``batch`` has spent on its platform, part by part: its charged assignments (``answered``, when
    counted already) at the provider's price and the bonuses sent, each with its fee. Never from the
    estimate: it holds the most the bonus rule could cost, which would count the bonuses twice."""
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
    """USD ``batch`` has spent, fees and bonuses included: the one figure every page shows."""
    return spending(batch, answered).total


def bonus_charges(batch: Batch) -> list[list[Decimal]]:
    """The bonuses sent for ``batch`` (paid, or sent and unconfirmed), grouped as its platform charges
    them, one fee per group (``CrowdProvider.bonus_charges``)."""
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
    """Whether ``batch`` is labelled by a machine first (it has derived batches or routings): such a
    batch is never published itself and its own cost estimate is never spent."""
    return batch.parent_id is None and (batch.derived.exists() or batch.routings.exists())


def counts_answers(prefix: str = "") -> Q:
    """The one rule of whose answers count (through ``prefix``: ``"assignment__"`` for judgments):
    submitted or approved work that passed its gold check or had none, and, where
    ``Batch.failed_gold_answers == "keep"``, work that failed it, even rejected (it loses the pay only)."""
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
    """The one count of who could still take a place on each of ``hit_ids`` (``None`` without a team): the
    active, unblocked members with no kept answer on that HIT, or a retake (unless ``retakes=False``)."""
    from annotation.models import Worker

    takers_in_all = team_size(batch)
    if takers_in_all is None:
        return None
    team = batch.team.filter(is_active=True)
    members = list(Worker.objects.filter(identity__user__in=team, blocked=False).values_list("pk", flat=True))
    of_members = Q(assignments__worker__in=members)
    if retakes and retake_allowed(batch):
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
    """Whether a team member whose work on a HIT failed its gold check may take it again (so that a small
    team completes): an in-house team batch that does not keep failed work's answers."""
    from annotation.models import Provider

    return batch.provider == Provider.LOCAL and batch.failed_gold_answers != "keep" and batch.team.exists()


def pay_figures(batch: Batch, done: QuerySet[Assignment]) -> dict[str, Any]:
    """What the batch's platform records of its pay (``CrowdProvider.pay_figures``), for the checklists."""
    return provider_class(batch.provider).pay_figures(batch, done)

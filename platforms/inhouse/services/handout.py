"""The one hand-out of HITs on this site (accounts: :mod:`.annotators`; the HIT page: :mod:`.hit_page`).

An annotator gets the HIT they hold unsubmitted, else the first HIT of the oldest published local
batch that still needs answers and that they have not done. Nobody is shown a HIT twice (``Assignment``
is unique on (hit, worker)) but for a retake (:func:`_retake_hit`). A hand-out whose time ran out
holds no place (:func:`holds_place`) and is marked abandoned later (:func:`release_abandoned`).

Concurrency-safe: on PostgreSQL the candidate HIT row is locked (``FOR UPDATE SKIP LOCKED``) and its
free places counted again under the lock; on SQLite the IMMEDIATE transactions serialise requests.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import connection, transaction
from django.db.models import (
    BooleanField,
    Exists,
    ExpressionWrapper,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
)
from django.utils import timezone

from annotation.crowd.providers.base import provider_class, provider_names
from annotation.models import FREES_PLACE, Assignment, Batch, Hit, Provider, Worker
from annotation.quality.services.training import plan_of, training_rows
from core.db.prepared import Prepared
from core.errors import ServiceError
from core.models import scope_of
from platforms.inhouse.services.annotators import annotator_worker, is_annotator, local_worker
from platforms.inhouse.services.team_access import assignment_open, open_to

#: How many locked candidates to try before giving up on a busy moment.
_CANDIDATES = 20


def release_held_hits(user_id: int) -> int:
    """Give the account's held HITs back to the queue when it is deactivated or leaves the annotators
    group (from the saves' signals); how many."""
    held = Assignment.objects.filter(worker__identity__user_id=user_id, status=Assignment.Status.ASSIGNED)
    return held.update(status=Assignment.Status.ABANDONED)


def _handed_out(worker) -> QuerySet:
    return Assignment.objects.filter(
        worker=worker, status=Assignment.Status.ASSIGNED, hit__batch__status=Batch.Status.PUBLISHED
    )


class NotAnnotator(ServiceError):
    """The user is not in the annotators group: they are given no HITs."""


class NotOpenToWorker(ServiceError):
    """A submit for a HIT whose batch closed to its worker (they left its team) since it was handed out."""

    def __init__(self, batch: Batch):
        super().__init__(
            f"batch {batch.name} is no longer open to you (you are not on its team): your answers were not recorded"
        )


@dataclass(frozen=True)
class NextHit:
    """Where the next-HIT page sends an annotator: a training step due, or a HIT, or (both ``None``) nowhere."""

    training: Batch | None = None
    assignment: Assignment | None = None


def next_hit_for(user) -> NextHit:
    """The next-HIT page's answer: the training step due, else the HIT they hold or a new one;
    :class:`NotAnnotator` for anyone else. One transaction from the worker's row lock (one annotator's tabs
    queue); the query after it sees their previous request's hand-out (PostgreSQL re-checks a row it
    waited for, not its subqueries)."""
    with transaction.atomic():
        worker = annotator_worker(user, lock=not writes_serialised())
        if worker is None:
            raise NotAnnotator("Only annotators are given HITs.")
        # The training step due, the batches a new HIT may come from, and (the same on every
        # row) whether the worker holds a hand-out: one query, compiled once.
        due, qualified = plan_of(_next_hit_batches(worker_id=worker.pk))
        if due is not None:
            return NextHit(training=due)
        holding = qualified[0].worker_holds > 0 if qualified else None
        return NextHit(assignment=next_assignment(user, worker=worker, batches=qualified, locked=True, holding=holding))


def _next_hit_batches_rows(worker_id: int) -> QuerySet:
    """:func:`next_hit_for`'s one read: quality's training plan over the local batches open to the worker."""
    batches = (
        Batch.objects.filter(provider=Provider.LOCAL)
        .filter(open_to(worker_id))  # team_access: only batches open to them, training included
        .annotate(worker_holds=CountOf(_may_hold(worker_id).values("pk")))
    )
    return training_rows(batches, worker_id)


def _may_hold(worker_id: int) -> QuerySet:
    """The worker's hand-outs not submitted, in any batch: counted from the (worker, status) index, as an
    ``EXISTS`` scanned the whole table (docs/benchmarks.md, "A plan that holds at any size")."""
    return Assignment.objects.filter(worker_id=worker_id, status=Assignment.Status.ASSIGNED)


_next_hit_batches = Prepared(_next_hit_batches_rows, scope=scope_of)


def on_site() -> list[str]:
    """Providers whose workers answer on this site (and are handed HITs by ``claim_hit``): ``answers_on_site``."""
    return [name for name in provider_names() if provider_class(name).answers_on_site]


#: Statuses that hold a place, except ``assigned``, which holds it only until its time runs out.
_KEPT = tuple(s for s in Assignment.Status.values if s not in FREES_PLACE and s != Assignment.Status.ASSIGNED)
#: Statuses in which an assignment still takes its annotator's answers (abandoned: while its HIT has a place).
TAKES_ANSWERS = (Assignment.Status.ASSIGNED, Assignment.Status.ABANDONED)
#: ``release_abandoned`` marks timed-out hand-outs abandoned at most this often per process (seconds).
RELEASE_EVERY = 60.0
_released_at: float | None = None
_release_lock = threading.Lock()


def release_abandoned(*, force: bool = False) -> int:
    """Mark hand-outs held past their batch's assignment duration abandoned, as MTurk does. Book-keeping
    only (:func:`holds_place` already frees their place), so at most once a ``RELEASE_EVERY`` per process."""
    global _released_at
    now_mono = time.monotonic()
    with _release_lock:
        if not force and _released_at is not None and now_mono - _released_at < RELEASE_EVERY:
            return 0
        _released_at = now_mono
    now = timezone.now()
    released = 0
    for batch in Batch.objects.filter(provider__in=on_site(), status=Batch.Status.PUBLISHED).only(
        "pk", "assignment_duration"
    ):
        released += Assignment.objects.filter(
            hit__batch=batch, status=Assignment.Status.ASSIGNED, accepted_at__lt=now - batch.assignment_duration
        ).update(status=Assignment.Status.ABANDONED)
    return released


def holds_place(deadline) -> Q:
    """Assignments holding a place of their HIT: kept, or handed out after ``deadline`` (now minus the
    batch's assignment duration: an older hand-out timed out, marked abandoned or not)."""
    handed_out = Q(status=Assignment.Status.ASSIGNED) & (Q(accepted_at__isnull=True) | Q(accepted_at__gte=deadline))
    return Q(status__in=_KEPT) | handed_out


def timed_out(assignment: Assignment, batch: Batch, now=None) -> bool:
    """A hand-out whose time ran out (it holds no place any more, marked abandoned or not yet)."""
    if assignment.status == Assignment.Status.ABANDONED:
        return True
    return (
        assignment.status == Assignment.Status.ASSIGNED
        and assignment.accepted_at is not None
        and assignment.accepted_at < (now or timezone.now()) - batch.assignment_duration
    )


def places_held(hit: Hit, deadline) -> int:
    return Assignment.objects.filter(holds_place(deadline), hit=hit).count()


def next_assignment(
    user,
    batch: Batch | None = None,
    *,
    worker: Worker | None = None,
    batches: Sequence[Batch] | None = None,
    locked: bool = False,
    holding: bool | None = None,
) -> Assignment | None:
    """The annotator's unfinished assignment, else a newly claimed one; ``None`` when nothing is left.
    ``batch``: only that batch. :func:`next_hit_for`'s reads, not read twice: ``worker``, ``batches``,
    ``locked`` (the row lock held), ``holding`` (whether they hold a hand-out)."""
    if worker is None:
        if not is_annotator(user):
            raise ServiceError("only annotators are given HITs")
        worker = local_worker(user)
    if worker.blocked:
        return None
    release_abandoned()
    in_batch = Q(hit__batch=batch) if batch is not None else Q()
    now = timezone.now()
    # No savepoint inside a caller's transaction (next_hit_for's, which holds the lock).
    with transaction.atomic(savepoint=False):
        # One open assignment per annotator across tabs and devices: requests of one worker
        # queue on their row, so the second sees the assignment the first was given.
        if not locked and not writes_serialised():
            list(Worker.objects.select_for_update().filter(pk=worker.pk).values_list("pk"))
        # Built only when it may find something (after a submit it cost more than the rest).
        handed_out = (
            _handed_out(worker)
            .filter(in_batch)
            .select_related("hit__batch")
            .annotate(open=ExpressionWrapper(assignment_open(), output_field=BooleanField()))
            .order_by("accepted_at")
            if holding is not False
            else ()
        )
        for current in handed_out:
            if current.open and not timed_out(current, current.hit.batch, now):
                return current
            # Its time ran out, or its batch closed to them (they left its team): its place is
            # free, and this annotator is given another HIT.
            Assignment.objects.filter(pk=current.pk, status=Assignment.Status.ASSIGNED).update(
                status=Assignment.Status.ABANDONED
            )
        if batches is None:
            from annotation.quality.services.training import qualified_batches

            local_batches = Batch.objects.filter(provider=Provider.LOCAL, **({"pk": batch.pk} if batch else {}))
            batches = qualified_batches(local_batches, worker)
        return claim_hit(worker, batches, f"local-{uuid.uuid4().hex}")


def claim_hit(worker: Worker, batches: QuerySet | Sequence[Batch], provider_assignment_id: str) -> Assignment | None:
    """Give ``worker`` a place on the first open HIT of ``batches`` (a queryset, or a list as
    ``training.plan_of`` reads it) they have not done. Callers hold the worker's row lock or key the claim
    by a provider id. An index walk of at most ``_CANDIDATES`` locked rows, whatever the batch's size."""
    now = timezone.now()
    if isinstance(batches, QuerySet):
        # A batch with a team gives its HITs to its members only (team_access).
        published = batches.filter(status=Batch.Status.PUBLISHED).filter(open_to(worker)).order_by("created", "pk")
        batches = published.only("pk", "assignment_duration")
    tried: list[int] = []
    serialised = writes_serialised()
    # No savepoint of its own: a caller that recovers from an error here (Prolific's arrival)
    # wraps the call in its own atomic block.
    with transaction.atomic(savepoint=False):
        for batch in batches:
            hit = _free_hit(batch, worker.pk, now - batch.assignment_duration, tried, serialised)
            if hit is not None:
                return Assignment.objects.create(
                    hit=hit, worker=worker, provider_assignment_id=provider_assignment_id, accepted_at=timezone.now()
                )
    return None


def _free_hit(batch: Batch, worker_id: int, deadline, tried: list[int], serialised: bool) -> Hit | None:
    """The batch's first open HIT with a free place the worker has not done, locked, else a retake if one is
    due; ``tried`` collects the HITs found full under their lock."""
    # One row locked at a time: locking many would let a concurrent claim find them all locked
    # and answer "No more HITs" although HITs were left.
    while len(tried) < _CANDIDATES:
        hit = _first_open_hit(batch.pk, worker_id, deadline, tried, wait=False)
        if hit is None:  # all left may be locked by other claims just now: wait for the first
            hit = _first_open_hit(batch.pk, worker_id, deadline, tried, wait=True)
            if hit is None:
                break  # nothing left in this batch that they have not done
        # Count again under the lock: the count above may predate another claim's commit.
        if not serialised and places_held(hit, deadline) >= hit.max_assignments:
            tried.append(hit.pk)
            continue
        return hit
    if len(tried) < _CANDIDATES:  # this batch is walked to its end: a retake, if one is due
        return _retake_hit(batch, worker_id, deadline)
    return None


def _retake_hit(batch: Batch, worker_id: int, deadline) -> Hit | None:
    """A HIT of ``batch`` whose work by the worker was all rejected for a failed gold check, with a free place
    no member who has not done it can fill, locked; else ``None``. Only where ``retake_allowed`` (no failed
    answers kept, so a small team completes its blind sample), once the worker has no fresh HIT left."""
    from annotation.crowd.selectors import place_takers, retake_allowed

    if not retake_allowed(batch):
        return None
    failed = Assignment.objects.filter(
        hit=OuterRef("pk"), worker_id=worker_id, status=Assignment.Status.REJECTED, gold_passed=False
    )
    other = Assignment.objects.filter(hit=OuterRef("pk"), worker_id=worker_id).exclude(
        status=Assignment.Status.REJECTED, gold_passed=False
    )
    candidates = (
        Hit.objects.filter(batch_id=batch.pk, status=Hit.Status.OPEN)
        .filter(Exists(failed), ~Exists(other))
        .order_by("position")
    )
    if connection.features.has_select_for_update:
        candidates = candidates.select_for_update(of=("self",))
    for hit in candidates[:_CANDIDATES]:
        free = hit.max_assignments - places_held(hit, deadline)
        if free > place_takers(batch, [hit.pk], retakes=False)[hit.pk]:
            return hit
    return None


def _first_open_hit(batch_id: int, worker_id: int, deadline, tried: Sequence[int], *, wait: bool) -> Hit | None:
    """The first open HIT of the batch with a free place, not done by the worker, locked (``wait=False``: skip
    locked rows). In SQL: the site's hottest query, which the ORM took longer to compile than to run."""
    hit, assignment = (connection.ops.quote_name(m._meta.db_table) for m in (Hit, Assignment))
    kept = ", ".join(["%s"] * len(_KEPT))
    not_tried = f"AND h.id NOT IN ({', '.join(['%s'] * len(tried))})" if tried else ""
    lock = ""
    if connection.features.has_select_for_update:
        lock = "FOR UPDATE OF h" + ("" if wait else " SKIP LOCKED")
    sql = (
        f"SELECT h.* FROM {hit} h WHERE h.batch_id = %s AND h.status = %s {not_tried} "
        f"AND NOT EXISTS (SELECT 1 FROM {assignment} a WHERE a.hit_id = h.id AND a.worker_id = %s) "
        f"AND (SELECT COUNT(*) FROM {assignment} a WHERE a.hit_id = h.id AND (a.status IN ({kept}) "
        f"OR (a.status = %s AND (a.accepted_at IS NULL OR a.accepted_at >= %s)))) < h.max_assignments "
        f"ORDER BY h.position LIMIT 1 {lock}"
    )
    params = [batch_id, Hit.Status.OPEN.value, *tried, worker_id, *_KEPT]
    params += [Assignment.Status.ASSIGNED.value, connection.ops.adapt_datetimefield_value(deadline)]
    found = list(Hit.objects.raw(sql, params))
    return found[0] if found else None


class CountOf(Subquery):
    """``(SELECT COUNT(*) FROM (subquery))``: how many rows a queryset has, as a column of the outer query."""

    template = "(SELECT COUNT(*) FROM (%(subquery)s) counted)"
    output_field = IntegerField()


def writes_serialised() -> bool:
    """Whether every transaction takes the write lock at BEGIN (SQLite, IMMEDIATE): then row locks and
    counts taken again "under the lock" add nothing."""
    return (
        connection.vendor == "sqlite"
        and str(connection.settings_dict.get("OPTIONS", {}).get("transaction_mode", "")).upper() == "IMMEDIATE"
    )

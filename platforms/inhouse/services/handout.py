"""In-house annotators: accounts, handing out HITs, submitting answers.

An annotator is a user in the ``annotators`` group (made by ``create_annotator`` or in
the admin; there is no sign-up). They ask for their next HIT and get, in this order,
the HIT they were already given and have not submitted, or a new one: the first HIT of
the oldest published local batch that still needs answers and that they have not done.
``Assignment`` is unique on (hit, worker) except for rejected work, so nobody is shown a HIT twice
but a team member whose work on it failed its gold check, where no other member can fill its place (a
retake, :func:`_retake_hit`: the rejected answers never count, so the retake's are their only kept
answers to those queries; a team of three completes its blind sample, issue 58). A hand-out
whose time ran out holds no place any more (:func:`holds_place`; its place goes back to the
queue at once) and is marked abandoned, not deleted, within a minute (:func:`release_abandoned`)
or when its annotator asks for the next HIT.

Handing out is concurrency-safe. On PostgreSQL the candidate HIT row is locked
(``SELECT ... FOR UPDATE SKIP LOCKED``) and its free places counted again under the lock,
so two annotators asking at once never overfill a HIT; on SQLite the project's IMMEDIATE
transactions serialise the two requests instead.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
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
from annotation.crowd.services.answers import AlreadyRecorded, AnswerCheck, record_answers
from annotation.crowd.services.pseudonyms import worker_for
from annotation.crowd.services.statuses import ANSWERED, settle_hit_status
from annotation.models import FREES_PLACE, Assignment, Batch, Hit, HitQuery, Provider, Worker
from annotation.quality.services.training import plan_of, training_rows
from core.db.prepared import Prepared, PreparedUpdate
from core.errors import ServiceError
from core.models import scope_of
from core.services.groups import join_current_group
from core.services.usernames import new_username
from platforms.inhouse.selectors import ANNOTATORS_GROUP
from platforms.inhouse.services.team_access import assignment_open, batch_open_to, is_open_to, open_to

#: How many locked candidates to try before giving up on a busy moment.
_CANDIDATES = 20


def validate_username(username: str) -> str:
    """The stored form of a username an annotator may have: an existing annotator's own, or a new one
    that passes :func:`core.services.usernames.new_username` (no look-alike, no reserved name)."""
    existing = get_user_model().objects.filter(username=username).first()
    return new_username(username, existing_pk=existing.pk if existing else None)


def create_annotator(
    username: str, password: str | None = None, email: str = "", *, reset_password: bool = False, reuse: bool = False
):
    """Create an annotator: a user in the annotators group with a worker pseudonym.

    An existing account is never taken over by accident: it is refused unless
    ``reset_password`` (set the given password on an existing annotator) or ``reuse``
    (return an existing annotator unchanged, for the simulation's re-runs) is asked for, and
    a staff or superuser account is refused always (annotators see only their own work;
    the researcher's account stays separate). Passwords go through the site's validators.
    Two requests adding the same new username at once: the second is refused with a
    ``ServiceError`` (a 400), not the database's unique violation.
    """
    username = validate_username(username)
    user_model = get_user_model()
    with transaction.atomic():
        user = user_model.objects.select_for_update().filter(username=username).first()
        if user is not None:
            if user.is_staff or user.is_superuser:
                raise ServiceError(f"{username!r} is a staff account: an annotator needs an account of their own")
            if not (reset_password or reuse):
                raise ServiceError(f"user {username!r} already exists; ask for a password reset to change theirs")
            if reuse and not reset_password:
                password = None
        else:
            user = user_model(username=username, email=email)
        if password:
            validate_new_password(password, user)
            user.set_password(password)
        elif user.pk is None:
            user.set_unusable_password()
        if user.pk is None:
            try:
                with transaction.atomic():
                    user.save()
            except IntegrityError:
                # Another request added the same username between the read above and this
                # insert (two adds at once; on PostgreSQL the second waits, then fails here).
                raise ServiceError(f"user {username!r} already exists (added a moment ago)") from None
        else:
            user.save()
        group, _ = Group.objects.get_or_create(name=ANNOTATORS_GROUP)
        user.groups.add(group)
        join_current_group(user)  # answers the batches of the group that made them
    local_worker(user)
    return user


def validate_new_password(password: str, user) -> None:
    """The site's password validators, as one ServiceError listing every complaint."""
    from django.contrib.auth.password_validation import validate_password

    try:
        validate_password(password, user)
    except ValidationError as error:
        raise ServiceError("password refused: " + " ".join(error.messages)) from None


def is_annotator(user) -> bool:
    return bool(user.is_authenticated and user.groups.filter(name=ANNOTATORS_GROUP).exists())


def in_annotators(user: int | OuterRef) -> Exists:
    """A condition on any row: the account (by id or reference) is in the annotators group.

    Folded into the statements the HIT page already runs (its read, its submit's ``UPDATE``),
    so an account taken out of the group is refused a HIT it still holds at no extra query.
    """
    groups = get_user_model().groups.through.objects.filter(group__name=ANNOTATORS_GROUP)
    return Exists(groups.filter(user_id=user))


def worker_in_annotators(worker: int | OuterRef) -> Exists:
    """:func:`in_annotators` for the account behind a worker (by id or reference)."""
    groups = get_user_model().groups.through.objects.filter(group__name=ANNOTATORS_GROUP)
    return Exists(groups.filter(user__annotation_identity__worker=worker))


def annotator_worker(user, *, lock: bool = False) -> Worker | None:
    """The annotator's worker, read with the group check in one query; ``None`` for anyone else.

    The same answer as ``local_worker(user) if is_annotator(user) else None``, in one statement
    on every request after an annotator's first (their worker exists from ``create_annotator``).
    ``lock``: the same statement takes the worker's row lock (inside a transaction, on a
    database with row locks), which serialises one annotator's requests.
    """
    if not user.is_authenticated:
        return None
    rows = _annotator_worker[lock](user_id=user.pk, external_id=str(user.pk))
    found = rows[0] if rows else None
    if found is not None:
        return found if found.annotator else None
    return local_worker(user) if is_annotator(user) else None


def _annotator_worker_rows(user_id: int, external_id: str, *, lock: bool) -> QuerySet:
    rows = Worker.objects.filter(identity__provider=Provider.LOCAL, identity__external_id=external_id).annotate(
        annotator=in_annotators(user_id)
    )
    if lock:
        rows = rows.select_for_update(of=("self",))
    return rows.order_by("pk")[:1]


#: :func:`annotator_worker`'s statement, compiled once (``core.db.prepared``): with and without the row lock.
_annotator_worker = {
    lock: Prepared(
        lambda user_id, external_id, lock=lock: _annotator_worker_rows(user_id, external_id, lock=lock),
        scope=scope_of,
    )
    for lock in (False, True)
}


def release_held_hits(user_id: int) -> int:
    """Give the account's held (handed out, unsubmitted) HITs back to the queue; how many.

    When it is deactivated or leaves the annotators group, however that happens
    (``accounts.watch_accounts`` calls this from the saves' signals; ``team.set_active``
    deactivates through such a save).
    """
    held = Assignment.objects.filter(worker__identity__user_id=user_id, status=Assignment.Status.ASSIGNED)
    return held.update(status=Assignment.Status.ABANDONED)


def _handed_out(worker) -> QuerySet:
    """The worker's assignments handed out and not submitted, in published batches (timed out or not)."""
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
    """The next-HIT page's answer for ``user``: the training step due, else the HIT they hold or a new one.

    One transaction from the first read, so nothing is read twice to be safe: on PostgreSQL
    the read of the worker takes their row lock (one annotator's tabs queue there, and the
    second sees the hand-out the first was given); on SQLite the IMMEDIATE transaction holds
    the write lock from ``BEGIN``. The query after it (the training step due and the batches
    open to them) also tells whether they hold a hand-out: it runs after the lock, so it
    sees what a previous request of theirs committed (not so the locking statement itself:
    PostgreSQL re-checks a row it waited for, not its subqueries). When they hold none
    (after a submit, the usual case), the hand-out query is skipped.
    Raises :class:`NotAnnotator` for anyone who is not an annotator.
    """
    with transaction.atomic():
        worker = annotator_worker(user, lock=not _writes_serialised())
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
        .annotate(worker_holds=_CountOf(_may_hold(worker_id).values("pk")))
    )
    return training_rows(batches, worker_id)


def _may_hold(worker_id: int) -> QuerySet:
    """The worker's hand-outs not submitted, in any batch: whether :func:`next_assignment` must look
    for one (it then reads them in published batches only, :func:`_handed_out`).

    Counted (a worker holds one or two), without the join to the HIT and its batch: one range
    of the (worker, status) index. PostgreSQL's generic plan for the prepared statement guesses
    a worker holds thousands (a small team sharing a large site's assignments): asked as an
    ``EXISTS`` it then scanned the whole table for a first match (3.8 ms at 30,000 assignments,
    12 ms at 45,000, growing with the site; with the join, along the HIT index); a count it
    reads from the index. A hand-out left in a batch closed since costs that worker the
    hand-out query on their next-HIT requests, and changes no answer.
    """
    return Assignment.objects.filter(worker_id=worker_id, status=Assignment.Status.ASSIGNED)


_next_hit_batches = Prepared(_next_hit_batches_rows, scope=scope_of)


def local_worker(user) -> Worker:
    """The pseudonymous worker of a local account (keyed by the user id, which never changes)."""
    return worker_for(Provider.LOCAL, str(user.pk), user=user)


def on_site() -> list[str]:
    """Providers whose workers answer on this site (and are handed HITs by ``claim_hit``): ``answers_on_site``."""
    return [name for name in provider_names() if provider_class(name).answers_on_site]


#: Statuses that hold a place, except ``assigned``, which holds it only until its time runs out.
_KEPT = tuple(s for s in Assignment.Status.values if s not in FREES_PLACE and s != Assignment.Status.ASSIGNED)
#: Statuses in which an assignment still takes its annotator's answers (abandoned: while its HIT has a place).
_TAKES_ANSWERS = (Assignment.Status.ASSIGNED, Assignment.Status.ABANDONED)
#: ``release_abandoned`` marks timed-out hand-outs abandoned at most this often per process (seconds).
RELEASE_EVERY = 60.0
_released_at: float | None = None
_release_lock = threading.Lock()


def release_abandoned(*, force: bool = False) -> int:
    """Mark hand-outs held longer than their batch's assignment duration abandoned, as MTurk does.

    Book-keeping only: a timed-out hand-out already holds no place when HITs are handed out
    or answers come late (:func:`holds_place`), whether or not it was marked yet. So this
    runs at most once a ``RELEASE_EVERY`` per process (``force``: now), not on every request.
    """
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
    """Assignments holding a place of their HIT: submitted or approved, or handed out after ``deadline``.

    ``deadline`` is now minus the batch's assignment duration: a hand-out older than that
    has timed out, and its place is free again even before it is marked abandoned.
    """
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


def _held(hit: Hit, deadline) -> int:
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

    ``batch`` limits both to one batch (the simulation uses it; the site offers every batch).
    ``worker``: the user's worker, when the caller has already checked that ``user`` is an
    annotator and read it (the next-HIT page), so neither is read twice. ``batches``: the
    batches a new HIT may come from, when the caller has read them already
    (the qualified batches of ``training.plan_of``), else read here. ``locked``: the caller's
    transaction already holds the worker's row lock (``next_hit_for``). ``holding``: whether the
    worker holds a hand-out, when the caller read it under the lock; ``False`` skips looking
    for one.
    """
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
        if not locked and not _writes_serialised():
            list(Worker.objects.select_for_update().filter(pk=worker.pk).values_list("pk"))
        # Built only when it may find something: after a submit (the usual case) building it
        # cost more CPU than the rest of the hand-out.
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
    """Give ``worker`` a place on the first open HIT of ``batches`` that has one and that they have not done.

    The one hand-out of the site, for in-house annotators and Prolific participants alike.
    Callers hold the worker's row lock (``next_assignment``) or key the claim by a
    provider id (Prolific), so one worker never claims twice at once.

    Its cost does not grow with the batch: batches are tried oldest first, and in each the
    open HITs are walked in order along the index on (batch, status, position), stopping at
    the first one with a free place that this worker has not done (complete HITs are not
    on the walk at all), trying at most ``_CANDIDATES`` locked rows in all.

    ``batches``: a queryset, or a list already read as this would read it (published, open to
    the worker, oldest first, with ``pk`` and ``assignment_duration``: ``training.plan_of``).
    """
    now = timezone.now()
    if isinstance(batches, QuerySet):
        # A batch with a team gives its HITs to its members only (team_access).
        published = batches.filter(status=Batch.Status.PUBLISHED).filter(open_to(worker)).order_by("created", "pk")
        batches = published.only("pk", "assignment_duration")
    tried: list[int] = []
    serialised = _writes_serialised()
    # No savepoint of its own: a caller that recovers from an error here (Prolific's arrival)
    # wraps the call in its own atomic block.
    with transaction.atomic(savepoint=False):
        for batch in batches:
            deadline = now - batch.assignment_duration
            # One row locked at a time: a claim that locked its first 20 candidates at once held
            # them all until it committed, and a concurrent claim skipping them could find every
            # open HIT locked and answer "No more HITs" although HITs were left.
            while len(tried) < _CANDIDATES:
                hit = _first_open_hit(batch.pk, worker.pk, deadline, tried, wait=False)
                if hit is None:  # all left may be locked by other claims just now: wait for the first
                    hit = _first_open_hit(batch.pk, worker.pk, deadline, tried, wait=True)
                    if hit is None:
                        break  # nothing left in this batch that they have not done
                # Count again under the lock: the count above may predate another claim's commit.
                if not serialised and _held(hit, deadline) >= hit.max_assignments:
                    tried.append(hit.pk)
                    continue
                return Assignment.objects.create(
                    hit=hit,
                    worker=worker,
                    provider_assignment_id=provider_assignment_id,
                    accepted_at=timezone.now(),
                )
            if len(tried) < _CANDIDATES:  # this batch is walked to its end: a retake, if one is due
                hit = _retake_hit(batch, worker.pk, deadline)
                if hit is not None:
                    return Assignment.objects.create(
                        hit=hit,
                        worker=worker,
                        provider_assignment_id=provider_assignment_id,
                        accepted_at=timezone.now(),
                    )
    return None


def _retake_hit(batch: Batch, worker_id: int, deadline) -> Hit | None:
    """A HIT of ``batch`` the worker did, all their work on it rejected for a failed gold check, with a free
    place that no member who has not done it can fill (``place_takers(retakes=False)``), locked; else ``None``.

    Only in a batch where :func:`~annotation.crowd.selectors.retake_allowed` (a team's in-house batch that
    does not keep failed work's answers): the rejected answers never count, so the retake's answers are
    the member's only kept answers to those queries. Members who have not done the HIT come first: a
    retake takes only the places beyond those they can fill. Looked for only once the worker has no
    fresh HIT left in the batch (a few queries; the usual hand-out never gets here).
    """
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
        free = hit.max_assignments - _held(hit, deadline)
        if free > place_takers(batch, [hit.pk], retakes=False)[hit.pk]:
            return hit
    return None


def _first_open_hit(batch_id: int, worker_id: int, deadline, tried: Sequence[int], *, wait: bool) -> Hit | None:
    """The first open HIT of the batch, in position order, with a free place and not done by the worker, locked.

    ``wait=False`` skips HITs other claims hold locked (``SKIP LOCKED``); ``wait=True`` waits
    for them. Without row locks (SQLite) the transaction's write lock does their work. The
    same query as ``Hit.objects.filter(batch=..., status=OPEN).filter(~Exists(mine))
    .annotate(taken=...).filter(taken__lt=F("max_assignments")).order_by("position")``
    with ``select_for_update(of=("self",))``, written out: it is the hottest query of the
    site, and compiling it through the ORM cost more CPU than running it. The database walks
    the (batch, status, position) index and stops at the first row that qualifies.
    """
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


def answered_count(user, *, worker_id: int | None = None) -> int:
    """How many HITs the annotator has submitted (whatever their review), for their own page.

    ``worker_id``: their worker's id, when the caller has it (one table, the (worker, status) index).
    """
    done = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED, Assignment.Status.REJECTED)
    mine = Q(worker_id=worker_id) if worker_id is not None else Q(worker__identity__user=user)
    return Assignment.objects.filter(mine, status__in=done).count()


#: Counted at most this far for "left for you": a bounded read whatever the batch's size.
PROGRESS_COUNT_LIMIT = 1000


@dataclass(frozen=True)
class HitProgress:
    """Where an annotator stands in a batch: this is their HIT ``number`` of ``total``, ``left`` after it."""

    number: int
    left: int
    left_is_lower_bound: bool = False

    @property
    def total(self) -> int:
        return self.number + self.left


def hit_progress(assignment: Assignment) -> HitProgress:
    """The annotator's place in the assignment's batch, as a HIT page shows it ("HIT 3 of 20 · 17 left").

    ``number`` counts the HITs of this batch they already submitted, plus this one; ``left``
    the batch's other open HITs they have not done (each HIT is done once per person; a place
    someone else holds may still free up), read up to ``PROGRESS_COUNT_LIMIT`` so the page
    costs the same in a batch of any size.
    """
    return answered_and_progress(assignment)[1]


_DONE = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED, Assignment.Status.REJECTED)


class _CountOf(Subquery):
    """``(SELECT COUNT(*) FROM (subquery))``: how many rows a queryset has, as a column of the outer query."""

    template = "(SELECT COUNT(*) FROM (%(subquery)s) counted)"
    output_field = IntegerField()


def answered_and_progress(assignment: Assignment) -> tuple[int, HitProgress]:
    """``answered_count`` of the assignment's worker and :func:`hit_progress`: their three counts in one query.

    One statement with the worker, batch and HIT as literal values, so the database plans
    each count for them: the annotator's submitted HITs and those of this batch (both along
    the (worker, status) index, "of this batch" a condition inside the count, so the batch's
    HITs are never walked), and the batch's open HITs left for them, up to
    ``PROGRESS_COUNT_LIMIT``. (Read as columns of the assignment's own query instead, the
    counts were planned for any worker and batch: PostgreSQL then scanned every HIT.)
    """
    (counts,) = _progress_counts(
        hit_id=assignment.hit_id, worker_id=assignment.worker_id, batch_id=assignment.hit.batch_id
    )
    answered, before, left = counts["answered"], counts["before"], counts["left"]
    progress = HitProgress(number=before + 1, left=left, left_is_lower_bound=left >= PROGRESS_COUNT_LIMIT)
    return answered, progress


def _progress_counts_rows(hit_id: int, worker_id: int, batch_id: int) -> QuerySet:
    done = Assignment.objects.filter(worker_id=worker_id, status__in=_DONE).order_by()
    mine = Assignment.objects.filter(hit=OuterRef("pk"), worker_id=worker_id)
    # In position order: the first PROGRESS_COUNT_LIMIT open HITs along the (batch, status,
    # position) index. Unordered, PostgreSQL scanned the whole HIT table for them (every batch's).
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
            answered=_CountOf(done.values("pk")),
            before=_CountOf(done.filter(hit__batch_id=batch_id).values("pk")),
            left=_CountOf(left),
        )
        .values("answered", "before", "left")
    )


#: :func:`answered_and_progress`'s statement, compiled once (``core.db.prepared``).
_progress_counts = Prepared(_progress_counts_rows, scope=scope_of)


def held_assignment(pk: int, user_id: int) -> Assignment | None:
    """The account's assignment ``pk`` for its HIT page, with its HIT and batch, and (columns of the
    same statement) ``open``: its batch still open to them (team_access) and ``annotator``: the
    account still in the annotators group; ``None`` when it is not theirs. Compiled once."""
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


def _writes_serialised() -> bool:
    """Whether every transaction here takes the database's write lock at BEGIN (SQLite, IMMEDIATE mode).

    Then the transaction already runs alone: a row lock (which SQLite does not have) or a
    count taken again "under the lock" adds a statement and nothing else.
    """
    return (
        connection.vendor == "sqlite"
        and str(connection.settings_dict.get("OPTIONS", {}).get("transaction_mode", "")).upper() == "IMMEDIATE"
    )


def submit_local_assignment(
    assignment: Assignment,
    answers: Mapping[str, str],
    *,
    hit_queries: Sequence[HitQuery] | None = None,
    count_answered: bool = False,
    current: bool = False,
) -> AnswerCheck:
    """Record an annotator's answers to a HIT they were given (once: a second submit is refused).

    Answers that arrive after the time ran out are still taken while the HIT has a free
    place; otherwise the annotator is told that they were not recorded. ``hit_queries``:
    the HIT's queries with their batch queries, when the caller has read them already.
    Only this HIT's status is settled (a submission changes no other HIT). ``count_answered``:
    also count the worker's submitted HITs (``answered_count``) into the check's
    ``answered_count``, in the same query as the HIT's answers.

    ``current``: the caller read ``assignment`` with its HIT and batch in this request (the
    HIT pages), so they are not read again; otherwise (an object that may be old) they are.
    Either way the answers are written only if the row still takes them: the status check
    and the write are one conditional ``UPDATE`` (``record_answers(only_from=...)``), which
    is what makes a second submit of the same assignment, in another tab at the same
    moment, record nothing. The same ``UPDATE`` checks that the batch is still open to the
    worker (team_access): one removed from its team since it was handed out is refused.
    """
    if not current:
        assignment = Assignment.objects.select_related("hit__batch").get(pk=assignment.pk)
    now = timezone.now()
    try:
        with transaction.atomic():
            return _submit(assignment, answers, now, hit_queries=hit_queries, count_answered=count_answered)
    except AlreadyRecorded:
        # Nothing written: already submitted, or its batch is no longer open to them, or (an
        # in-house batch) they are no longer an annotator (a query or two, on this refusal
        # only, tells which).
        batch = assignment.hit.batch
        if batch.provider == Provider.LOCAL and not _worker_is_annotator(assignment.worker_id):
            raise NotAnnotator("you are no longer an annotator: your answers were not recorded") from None
        if not is_open_to(batch, assignment.worker_id):
            raise NotOpenToWorker(batch) from None
        raise


def _worker_is_annotator(worker_id: int) -> bool:
    return Worker.objects.filter(pk=worker_id).filter(worker_in_annotators(worker_id)).exists()


def _submit_counts_rows(hit_id: int, worker_id: int, batch_id: int) -> QuerySet:
    """The HIT's answered assignments (its status), the worker's done HITs, and (the header's
    number, as :func:`answered_and_progress` counts it) those of this batch: one statement."""
    done = Assignment.objects.filter(worker_id=worker_id, status__in=_DONE).order_by()
    answered = Assignment.objects.filter(hit_id=hit_id, status__in=ANSWERED).order_by()
    return (
        Hit.objects.filter(pk=hit_id)
        .order_by()  # one row: without the model's ordering, which joined the batch to sort it
        .annotate(
            this_hit=_CountOf(answered.values("pk")),
            worker=_CountOf(done.values("pk")),
            in_batch=_CountOf(done.filter(hit__batch_id=batch_id).values("pk")),
        )
        .values("this_hit", "worker", "in_batch")
    )


_submit_counts = Prepared(_submit_counts_rows, scope=scope_of)


def _answer_write_rows(pk: int, batch_id: int, worker_id: int, *, annotator: bool) -> QuerySet:
    """The submit's conditional UPDATE's rows: the assignment, while it still takes answers (on its
    own status column: see ``record_answers``), its batch is still open to the worker and (an
    in-house batch, ``annotator``) its worker is still an annotator."""
    still_open = batch_open_to(batch_id, worker_id)
    if annotator:
        still_open &= worker_in_annotators(worker_id)
    return Assignment.objects.filter(pk=pk, status__in=list(_TAKES_ANSWERS)).filter(still_open)


#: The submit's UPDATE, compiled once (``core.db.prepared``): building and compiling its subqueries
#: cost more CPU than running it. Keyed by whether the batch is in-house (the annotators check).
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
    """:func:`submit_local_assignment`'s work, inside its transaction."""
    hit, batch = assignment.hit, assignment.hit.batch
    if timed_out(assignment, batch, now):
        if _held(hit, now - batch.assignment_duration) >= hit.max_assignments:
            raise ServiceError(
                "the time for this HIT ran out and others have taken its places; your answers were not recorded"
            )
    elif assignment.status != Assignment.Status.ASSIGNED:
        raise ServiceError("this HIT was already submitted")
    if batch.status != Batch.Status.PUBLISHED:
        raise ServiceError("this batch is no longer open")
    raw = json.dumps(dict(answers), sort_keys=True)
    # The batch must still be open to the worker (team_access), and an in-house batch's worker
    # still an annotator (not taken out of the group since): checked in the write itself.
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

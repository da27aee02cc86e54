"""In-house annotators: accounts, handing out HITs, submitting answers.

An annotator is a user in the ``annotators`` group (made by ``create_annotator`` or in
the admin; there is no sign-up). They ask for their next HIT and get, in this order,
the HIT they were already given and have not submitted, or a new one: the first HIT of
the oldest published local batch that still needs answers and that they have not done.
``Assignment`` is unique on (hit, worker), so nobody is ever shown a HIT twice: a hand-out
whose time ran out is marked abandoned (its place goes back to the queue), not deleted.

Handing out is concurrency-safe. On PostgreSQL the candidate HIT row is locked
(``SELECT ... FOR UPDATE SKIP LOCKED``) and its free places counted again under the lock,
so two annotators asking at once never overfill a HIT; on SQLite the project's IMMEDIATE
transactions serialise the two requests instead.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from core.errors import ServiceError

from ..models import FREES_PLACE, Assignment, Batch, Hit, Provider, Worker
from ..pseudonyms import worker_for
from .answers import AnswerCheck, record_answers
from .statuses import settle_hit_statuses
from .team_access import open_to

ANNOTATORS_GROUP = "annotators"
#: How many locked candidates to try before giving up on a busy moment.
_CANDIDATES = 20


def validate_username(username: str) -> str:
    """Django's rule for usernames (letters, digits and @.+-_), as a ServiceError naming the value."""
    try:
        get_user_model().username_validator(username)
    except ValidationError:
        raise ServiceError(f"username {username!r} is not usable: use letters, digits and @ . + - _") from None
    return username


def create_annotator(
    username: str, password: str | None = None, email: str = "", *, reset_password: bool = False, reuse: bool = False
):
    """Create an annotator: a user in the annotators group with a worker pseudonym.

    An existing account is never taken over by accident: it is refused unless
    ``reset_password`` (set the given password on an existing annotator) or ``reuse``
    (return an existing annotator unchanged, for the simulation's re-runs) is asked for, and
    a staff or superuser account is refused always (annotators see only their own work;
    the researcher's account stays separate). Passwords go through the site's validators.
    """
    validate_username(username)
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
        user.save()
        group, _ = Group.objects.get_or_create(name=ANNOTATORS_GROUP)
        user.groups.add(group)
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


def local_worker(user) -> Worker:
    """The pseudonymous worker of a local account (keyed by the user id, which never changes)."""
    return worker_for(Provider.LOCAL, str(user.pk), user=user)


#: Providers whose workers answer on this site (and are handed HITs by ``claim_hit``).
ON_SITE = (Provider.LOCAL, Provider.PROLIFIC)
#: Assignments that no longer hold a place of their HIT.
_FREED = FREES_PLACE


def _release_abandoned() -> None:
    """Free places held longer than the batch's assignment duration, as MTurk does."""
    now = timezone.now()
    for batch in Batch.objects.filter(provider__in=ON_SITE, status=Batch.Status.PUBLISHED):
        Assignment.objects.filter(
            hit__batch=batch, status=Assignment.Status.ASSIGNED, accepted_at__lt=now - batch.assignment_duration
        ).update(status=Assignment.Status.ABANDONED)


def _held(hit: Hit) -> int:
    return Assignment.objects.filter(hit=hit).exclude(status__in=_FREED).count()


def _taken(hit_ref) -> Subquery:
    """Places of a HIT held by anyone: handed out, submitted or approved (rejected and abandoned ones are free again)."""
    return Coalesce(
        Subquery(
            Assignment.objects.filter(hit=hit_ref)
            .exclude(status__in=_FREED)
            .order_by()
            .values("hit")
            .annotate(n=Count("pk"))
            .values("n")
        ),
        0,
    )


def next_assignment(user, batch: Batch | None = None) -> Assignment | None:
    """The annotator's unfinished assignment, else a newly claimed one; ``None`` when nothing is left.

    ``batch`` limits both to one batch (the simulation uses it; the site offers every batch).
    """
    if not is_annotator(user):
        raise ServiceError("only annotators are given HITs")
    worker = local_worker(user)
    if worker.blocked:
        return None
    _release_abandoned()
    in_batch = Q(hit__batch=batch) if batch is not None else Q()
    with transaction.atomic():
        # One open assignment per annotator across tabs and devices: requests of one worker
        # queue on their row, so the second sees the assignment the first was given.
        list(Worker.objects.select_for_update().filter(pk=worker.pk).values_list("pk"))
        current = (
            Assignment.objects.filter(
                in_batch,
                worker=worker,
                status=Assignment.Status.ASSIGNED,
                hit__batch__status=Batch.Status.PUBLISHED,
            )
            .select_related("hit__batch")
            .order_by("accepted_at")
            .first()
        )
        if current is not None:
            return current
        from .training import qualified_batches

        local_batches = Batch.objects.filter(provider=Provider.LOCAL, **({"pk": batch.pk} if batch else {}))
        return claim_hit(worker, qualified_batches(local_batches, worker), f"local-{uuid.uuid4().hex}")


def claim_hit(worker: Worker, batches, provider_assignment_id: str) -> Assignment | None:
    """Give ``worker`` a place on the first open HIT of ``batches`` that has one and that they have not done.

    The one hand-out of the site, for in-house annotators and Prolific participants alike.
    Callers hold the worker's row lock (``next_assignment``) or key the claim by a
    provider id (Prolific), so one worker never claims twice at once.
    """
    candidates = (
        Hit.objects.filter(batch__in=batches, batch__status=Batch.Status.PUBLISHED, status=Hit.Status.OPEN)
        .filter(open_to(worker))  # a batch with a team: its members only
        .exclude(assignments__worker=worker)
        .annotate(taken=_taken(OuterRef("pk")))
        .filter(taken__lt=F("max_assignments"))
        .order_by("batch__created", "batch__pk", "position")
    )
    with transaction.atomic():
        # One row locked at a time: a claim that locked its first 20 candidates at once held
        # them all until it committed, and a concurrent claim skipping them could find every
        # open HIT locked and answer "No more HITs" although HITs were left.
        tried: list[int] = []
        for _ in range(_CANDIDATES):
            remaining = candidates.exclude(pk__in=tried)
            hit = remaining.select_for_update(skip_locked=True, of=("self",)).first()
            if hit is None:  # all left may be locked by other claims just now: wait for the first
                hit = remaining.select_for_update(of=("self",)).first()
                if hit is None:
                    return None
            # Count again under the lock: the count above may predate another claim's commit.
            if _held(hit) >= hit.max_assignments:
                tried.append(hit.pk)
                continue
            return Assignment.objects.create(
                hit=hit,
                worker=worker,
                provider_assignment_id=provider_assignment_id,
                accepted_at=timezone.now(),
            )
    return None


def answered_count(user) -> int:
    """How many HITs the annotator has submitted (whatever their review), for their own page."""
    done = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED, Assignment.Status.REJECTED)
    return Assignment.objects.filter(worker__identity__user=user, status__in=done).count()


def submit_local_assignment(assignment: Assignment, answers: Mapping[str, str]) -> AnswerCheck:
    """Record an annotator's answers to a HIT they were given (once: a second submit is refused).

    Answers that arrive after the time ran out are still taken while the HIT has a free
    place; otherwise the annotator is told that they were not recorded.
    """
    with transaction.atomic():
        locked = Assignment.objects.select_for_update().select_related("hit__batch").get(pk=assignment.pk)
        if locked.status == Assignment.Status.ABANDONED:
            if _held(locked.hit) >= locked.hit.max_assignments:
                raise ServiceError(
                    "the time for this HIT ran out and others have taken its places; your answers were not recorded"
                )
            locked.status = Assignment.Status.ASSIGNED
        elif locked.status != Assignment.Status.ASSIGNED:
            raise ServiceError("this HIT was already submitted")
        if locked.hit.batch.status != Batch.Status.PUBLISHED:
            raise ServiceError("this batch is no longer open")
        raw = json.dumps(dict(answers), sort_keys=True)
        check = record_answers(locked, answers, raw)
        settle_hit_statuses(locked.hit.batch)
        return check

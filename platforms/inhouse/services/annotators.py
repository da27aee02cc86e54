"""In-house annotators' accounts (no sign-up): a user in the ``annotators`` group with a pseudonymous
worker; their username and password rules, and the group check folded into the HIT page's statements.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import (
    Exists,
    OuterRef,
    QuerySet,
)

from annotation.crowd.services.pseudonyms import worker_for
from annotation.models import Provider, Worker
from core.db.prepared import Prepared
from core.errors import ServiceError
from core.models import scope_of
from core.services.groups import join_current_group
from core.services.usernames import new_username
from platforms.inhouse.selectors import ANNOTATORS_GROUP


def validate_username(username: str) -> str:
    """The stored form of a username an annotator may have: an existing annotator's own, or a new one
    that passes :func:`core.services.usernames.new_username` (no look-alike, no reserved name)."""
    existing = get_user_model().objects.filter(username=username).first()
    return new_username(username, existing_pk=existing.pk if existing else None)


def create_annotator(
    username: str, password: str | None = None, email: str = "", *, reset_password: bool = False, reuse: bool = False
):
    """Create an annotator (in the annotators group, with a worker pseudonym). An existing account is refused
    unless ``reset_password`` or ``reuse`` (the simulation's re-runs); a staff account always (annotators
    see only their own work); a username taken meanwhile is a ``ServiceError`` (400)."""
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
    """A condition on any row: the account (by id or reference) is in the annotators group; folded into the
    HIT page's statements, so an account taken out of the group is refused at no extra query."""
    groups = get_user_model().groups.through.objects.filter(group__name=ANNOTATORS_GROUP)
    return Exists(groups.filter(user_id=user))


def worker_in_annotators(worker: int | OuterRef) -> Exists:
    """:func:`in_annotators` for the account behind a worker (by id or reference)."""
    groups = get_user_model().groups.through.objects.filter(group__name=ANNOTATORS_GROUP)
    return Exists(groups.filter(user__annotation_identity__worker=worker))


def annotator_worker(user, *, lock: bool = False) -> Worker | None:
    """``local_worker(user) if is_annotator(user) else None`` in one statement; ``lock``: it also takes the
    worker's row lock, which serialises one annotator's requests."""
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


def local_worker(user) -> Worker:
    """The pseudonymous worker of a local account (keyed by the user id, which never changes)."""
    return worker_for(Provider.LOCAL, str(user.pk), user=user)

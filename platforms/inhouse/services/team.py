"""The team of in-house annotators, managed by researchers from the site and the API.

An account gets in by a **one-time link** (``access="link"``: Django's password-reset token,
``accounts.access_token_generator``, which expires after ``PASSWORD_RESET_TIMEOUT`` and is good for
one use as it hashes the password and last login) or a **generated password** (``access="password"``)
shown once. Resetting makes the old password unusable first, so a leaked one stops at once.
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from annotation.accounts import access_token_generator
from annotation.models import Assignment, Batch, Provider
from core.errors import ServiceError
from core.selectors import require_account_manager
from platforms.inhouse.selectors import team_members
from platforms.inhouse.services.annotators import create_annotator, validate_new_password
from platforms.inhouse.services.team_access import assignment_open

ACCESS = ("link", "password")


@dataclass(frozen=True)
class Access:
    """How an annotator gets in: a one-time link (its path and expiry) or a password, never both."""

    user: object
    password: str | None = None
    link_path: str | None = None
    link_expires: dt.datetime | None = None


def _check_access(access: str) -> None:
    if access not in ACCESS:
        raise ServiceError(f"access must be one of {', '.join(ACCESS)}, not {access!r}")


def generate_password(user) -> str:
    """A random password of 20 URL-safe characters that passes the site's validators."""
    while True:
        password = secrets.token_urlsafe(15)
        try:
            validate_new_password(password, user)
        except ServiceError:  # e.g. all digits by chance, or too like the username
            continue
        return password


def one_time_link(user) -> Access:
    """A set-password link for ``user``: expires after PASSWORD_RESET_TIMEOUT, good for one use."""
    uidb64 = urlsafe_base64_encode(force_bytes(user.pk))
    token = access_token_generator.make_token(user)
    return Access(
        user=user,
        link_path=reverse("annotation:team-welcome", kwargs={"uidb64": uidb64, "token": token}),
        link_expires=timezone.now() + dt.timedelta(seconds=settings.PASSWORD_RESET_TIMEOUT),
    )


def accept_link(user, password: str, *, checked_against: str) -> bool:
    """Set the password chosen through ``user``'s one-time link; ``False`` if used meanwhile: one conditional
    ``UPDATE`` on ``checked_against`` (the hash the token was checked against), so one browser wins."""
    user.set_password(password)
    accepted = (
        get_user_model()
        ._base_manager.filter(pk=user.pk, password=checked_against, is_active=True, is_staff=False, is_superuser=False)
        .update(password=user.password)
    )
    if accepted:
        from django.contrib.auth.password_validation import password_changed

        password_changed(password, user)
    else:
        user.password = checked_against
    return bool(accepted)


@transaction.atomic
def add_member(username: str, email: str = "", *, access: str = "link") -> Access:
    """A new annotator account, with a one-time link to choose a password or a generated one."""
    _check_access(access)
    user = create_annotator(username, email=email)  # an unusable password until one is given or chosen
    return _give_password(user) if access == "password" else one_time_link(user)


def _give_password(user) -> Access:
    password = generate_password(user)
    user.set_password(password)
    user.save(update_fields=["password"])
    return Access(user=user, password=password)


def reset_access(user, *, access: str = "link", by=None) -> Access:
    """The old password (and every earlier link) stops working; a new link or password is made. ``by``: who
    asks (``None``: the operator), refused (403) unless :func:`core.selectors.require_account_manager`."""
    _check_access(access)
    with transaction.atomic():
        user = _locked_member(user, by)
        user.set_unusable_password()
        user.save(update_fields=["password"])
        return _give_password(user) if access == "password" else one_time_link(user)


def set_active(user, active: bool, *, by=None):
    """Deactivate or reactivate through the save: the access epoch rises (sessions and links end for good)
    and held HITs go back (``accounts.watch_accounts``). ``by``: as for :func:`reset_access`."""
    with transaction.atomic():
        user = _locked_member(user, by)
        user.is_active = active
        user.save(update_fields=["is_active"])
    return user


def _locked_member(user, by):
    member = team_members().select_for_update().filter(pk=user.pk).first()
    if member is None:
        raise ServiceError(f"{user.username!r} is not an annotator")
    require_account_manager(by, member)  # its memberships read after the lock: no change in between
    return member


def set_batch_team(batch: Batch, usernames: Iterable[str]) -> list:
    """Restrict an in-house batch to these annotators (none: every annotator); the team. HITs held by
    those it is no longer open to go back to the queue at once."""
    if batch.provider != Provider.LOCAL:
        raise ServiceError(f"batch {batch.name!r} is not in-house: only local batches have a team")
    wanted = sorted(set(usernames))
    members = list(team_members().filter(username__in=wanted))
    unknown = sorted(set(wanted) - {m.username for m in members})
    if unknown:
        raise ServiceError(f"not annotators: {', '.join(unknown)}")
    with transaction.atomic():
        batch.team.set(members)
        Assignment.objects.filter(hit__batch=batch, status=Assignment.Status.ASSIGNED).exclude(
            assignment_open()
        ).update(status=Assignment.Status.ABANDONED)
    return members

"""The team of in-house annotators, managed by researchers from the site and the API.

A researcher makes an annotator's account in one of two ways, and gets a fresh one the same
ways when the annotator has lost theirs:

- a **one-time link** (``access="link"``): the account has no usable password until the
  annotator opens the link and chooses one. The link is Django's password-reset token
  (``accounts.access_token_generator``): it expires after ``PASSWORD_RESET_TIMEOUT`` and is
  good for one use, because it is a hash over the account's password and last login, both
  of which change once it has been used (accepting it is one conditional ``UPDATE``: of two
  browsers accepting it at once, one wins); a newer link or password also ends it, and so
  does losing rights (deactivation), for good (the account's access epoch);
- a **generated password** (``access="password"``), shown once to the researcher.

Resetting always makes the old password unusable first, so a leaked one stops working at
once (and the annotator's sessions end: Django checks the password hash on every request).

Deactivating an account refuses its logins and ends its sessions and links for good: a
reactivation does not bring them back (``annotation.accounts``: the access epoch); the HITs
it held are given back to the queue at once.

A local batch can be restricted to a team (``Batch.team``; empty: every annotator may work
on it); the hand-out then gives its HITs and its training to team members only, and takes
their answers from them only (:mod:`.team_access`); one who leaves the team gives back the
HIT they held. The team's reads (members, the team page's rows, each annotator's progress on
a batch) are :mod:`platforms.inhouse.selectors`.
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
    """Set the password chosen through ``user``'s one-time link, unless the link was used meanwhile.

    ``checked_against``: the password hash the link's token was checked against. The
    check and the write are one conditional ``UPDATE`` on it (and on the account still being
    an active non-staff one): of two browsers accepting the same link at once, one sets its
    password and the other is told the link was used (``False``); before, both were told
    "password set" and the last write won.
    """
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
    if access == "password":
        user = create_annotator(username, email=email)  # unusable password until set below
        return _give_password(user)
    return one_time_link(create_annotator(username, email=email))


def _give_password(user) -> Access:
    password = generate_password(user)
    user.set_password(password)
    user.save(update_fields=["password"])
    return Access(user=user, password=password)


def reset_access(user, *, access: str = "link", by=None) -> Access:
    """The old password stops working (and every earlier link); a new link or password is made.

    ``by``: who asks (``None``: the operator); refused (403) unless they may manage the account
    (:func:`core.selectors.require_account_manager`: an annotator of two groups only by a superuser
    or an owner of both)."""
    _check_access(access)
    with transaction.atomic():
        user = _locked_member(user, by)
        user.set_unusable_password()
        user.save(update_fields=["password"])
        if access == "password":
            return _give_password(user)
        return one_time_link(user)


def set_active(user, active: bool, *, by=None):
    """Deactivate (no more logins, sessions and links end for good, held HITs go back to the queue) or reactivate.

    Both through the save, whoever makes it (these pages, the API, the admin): a change of
    ``is_active`` raises the account's access epoch, and turning it off releases its held
    HITs (``local.release_held_hits``; ``accounts.watch_accounts``). ``by``: as for :func:`reset_access`.
    """
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
    """Restrict an in-house batch to these annotators (none: every annotator); returns the team.

    HITs of the batch held by annotators it is no longer open to go back to the queue at once
    (their submit would be refused: ``local.submit_local_assignment``).
    """
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

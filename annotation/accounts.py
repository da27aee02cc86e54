"""Account state that ends sessions and one-time links for good: the access epoch.

Django ends a deactivated user's sessions only while they are inactive (its backend
ignores inactive users), and a password-reset token depends only on the password, the
last login and the e-mail: reactivate the account, or make it staff and back, and a
session opened before, or a one-time link made before, works again. So every account
(annotator or researcher) carries an *access epoch* (``AccountState.access_epoch``, a row
made when first raised), raised whenever what the account may do changes:

- its active, staff or superuser status changes (deactivated or reactivated, made staff or
  back), or it is taken out of the annotators group, wherever it happens: the team pages,
  the API, the admin (:func:`watch_accounts` listens to the saves);

and both ends check it:

- **sessions**: :class:`AccountBackend` reads a session's user as an ``Account`` with its
  epoch (one statement, as Django's backend; on a session this process has seen, the same
  statement that reads the session: :class:`SessionStore`), and the session hash covers the epoch
  (``Account._get_session_auth_hash``): a session opened before the raise no longer
  verifies, and Django ends it (flushes it) on its next request;
- **one-time links**: :data:`access_token_generator` mixes the epoch into the token's hash,
  so a link made before the raise is refused for good.

Deactivated or taken out of the annotators group, an account also gives back the HITs it
held (``local.release_held_hits``), and the HIT page and its submit ask for the annotators
group (``local.in_annotators``, in the statements they run anyway).

An account whose epoch was never raised hashes as Django does, so sessions and links made
before this existed keep working. Not covered: ``QuerySet.update(is_active=...)`` (no
signal).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth import HASH_SESSION_KEY, get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.tokens import PasswordResetTokenGenerator
from django.db.models import F, IntegerField, Subquery, Value
from django.db.models.functions import Coalesce

from annotation.models import Account, AccountState
from core.db.prepared import Prepared
from core.models import GROUP_ROLES, group_roles_column
from core.web import sessions

#: A change of any of these may take something away from the account.
_STATE_FIELDS = ("is_active", "is_staff", "is_superuser")


def _epoch_of(user_ref) -> Coalesce:
    rows = AccountState.objects.filter(user_id=user_ref).order_by().values("access_epoch")[:1]
    return Coalesce(Subquery(rows, output_field=IntegerField()), Value(0))


def accounts():
    """Every user as an ``Account`` with its access epoch, read in the same statement."""
    from django.db.models import OuterRef

    return Account.objects.annotate(access_epoch=_epoch_of(OuterRef("pk")))


def _session_account_rows(pk: int):
    """The session's user with its access epoch and (for the request's scope, ``core.models.scope_of``)
    its role in every research group: one statement where there were two."""
    from django.db import connection

    user_id = f"{connection.ops.quote_name(Account._meta.db_table)}.{connection.ops.quote_name('id')}"
    return accounts().annotate(**{GROUP_ROLES: group_roles_column(user_id)}).filter(pk=pk)


#: The session's user, read on every request: compiled once (``core.db.prepared``); no study model in it.
_session_account = Prepared(_session_account_rows, scope=None)


def _session_and_account_rows(pk: int, session_key: str):
    """:func:`_session_account_rows` with the session's row (its data and expiry) as two columns:
    the request's session and its user in one statement (``core.web.sessions``)."""
    from django.contrib.sessions.models import Session

    session = Session.objects.filter(session_key=session_key)
    return _session_account_rows(pk).annotate(
        read_session_data=Subquery(session.values("session_data")[:1]),
        read_session_expiry=Subquery(session.values("expire_date")[:1]),
    )


_session_and_account = Prepared(_session_and_account_rows, scope=None)


class SessionStore(sessions.SessionStore):
    """``SESSION_ENGINE = "annotation.accounts"``: the site's database sessions (``core.web.sessions``),
    a session seen before read with its account (access epoch and research-group roles included)."""

    def _read_with_user(self, session_key: str, user_id: int):
        found = _session_and_account(pk=user_id, session_key=session_key)
        if not found or found[0].read_session_data is None:
            return None
        user = found[0]
        data, expiry = user.read_session_data, user.read_session_expiry
        del user.read_session_data, user.read_session_expiry  # the user object does not carry the session
        return data, expiry, user


def account(user) -> Account:
    """``user`` as an ``Account`` with its current access epoch (one query)."""
    return accounts().get(pk=user.pk)


def access_epoch(user) -> int:
    """The account's current access epoch (0 if never raised)."""
    row = AccountState.objects.filter(user_id=user.pk).values_list("access_epoch", flat=True).first()
    return row or 0


def raise_access_epoch(user_id: int) -> None:
    """End every session and one-time link of the account made until now, for good.

    Any account: an annotator's, or a researcher's (whose stolen cookie must not come back
    with a reactivation or a staff round trip either). The first raise makes its row; the
    increment is one ``UPDATE`` so concurrent raises both count.
    """
    if AccountState.objects.filter(user_id=user_id).update(access_epoch=F("access_epoch") + 1):
        return
    AccountState.objects.bulk_create([AccountState(user_id=user_id)], ignore_conflicts=True)
    AccountState.objects.filter(user_id=user_id).update(access_epoch=F("access_epoch") + 1)


class AccountBackend(ModelBackend):
    """Django's model backend, reading a session's user as an ``Account`` bound to its access epoch."""

    def get_user(self, user_id):
        if isinstance(user_id, int) and not isinstance(user_id, bool):
            user = sessions.user_read_with_session(user_id)  # read with this request's session
            if user is None:
                found = _session_account(pk=user_id)
                user = found[0] if found else None
        else:
            user = accounts().filter(pk=user_id).first()
        if user is None:
            return None
        return user if self.user_can_authenticate(user) else None

    async def aget_user(self, user_id):
        return await sync_to_async(self.get_user)(user_id)


class AccessTokenGenerator(PasswordResetTokenGenerator):
    """Django's password-reset tokens, also ended by a raise of the account's access epoch."""

    key_salt = "django.contrib.auth.tokens.PasswordResetTokenGenerator"  # Django's: older links keep working

    def _make_hash_value(self, user, timestamp) -> str:
        base = super()._make_hash_value(user, timestamp)
        epoch = access_epoch(user)
        return f"{base}:epoch={epoch}" if epoch else base


access_token_generator = AccessTokenGenerator()


# --- signal receivers (connected in ``AnnotationConfig.ready``) ------------------------------


def _bind_login_to_epoch(sender, request, user, **kwargs) -> None:
    """``user_logged_in``: the new session's hash covers the account's epoch, however it logged in.

    ``login()`` stored the hash of the user object it was given (a plain ``User`` from the
    login form's backend or ``force_login``); the sessions' backend checks the ``Account``'s
    (the same while the epoch was never raised). One query, at login only.
    """
    if request is not None and hasattr(request, "session"):
        request.session[HASH_SESSION_KEY] = account(user).get_session_auth_hash()


def _raise_on_lost_rights(sender, instance, update_fields=None, raw=False, **kwargs) -> None:
    """``pre_save`` of a user: raise the epoch when active, staff or superuser status changes;
    release the held HITs when it is deactivated."""
    if raw or instance.pk is None:
        return
    if update_fields is not None and not set(update_fields) & set(_STATE_FIELDS):
        return  # e.g. the last_login written at every login: no read
    before = type(instance)._base_manager.filter(pk=instance.pk).values_list(*_STATE_FIELDS).first()
    if before is not None and before != tuple(getattr(instance, name) for name in _STATE_FIELDS):
        raise_access_epoch(instance.pk)
        if before[0] and not instance.is_active:  # deactivated: the HITs it held go back to the queue
            _release(instance.pk)


#: The annotators' group and what gives a user's held HITs back to the queue, told by the platform of
#: this site's own annotators at start-up (:func:`watch_annotators`; platforms.inhouse): none, nothing to do.
_ANNOTATORS: dict[str, Any] = {"group": None, "release": None}


def watch_annotators(group: str, release: Callable[[int], None]) -> None:
    """Leaving ``group`` or being deactivated ends a user's rights to the HITs they hold: ``release(user_id)``
    (called by the in-house platform's ``ready()``)."""
    _ANNOTATORS.update(group=group, release=release)


def _release(user_id: int) -> None:
    if _ANNOTATORS["release"] is not None:
        _ANNOTATORS["release"](user_id)


def _raise_on_leaving_annotators(sender, instance, action, reverse, model, pk_set, **kwargs) -> None:
    """``m2m_changed`` of users' groups: leaving the annotators group raises the member's epoch
    and gives the HITs they held back to the queue (they may no longer answer them)."""
    from django.contrib.auth.models import Group

    ANNOTATORS_GROUP = _ANNOTATORS["group"]
    if action not in ("pre_remove", "pre_clear") or ANNOTATORS_GROUP is None:
        return
    if not reverse:  # user.groups.remove(...) / clear(): instance is the user
        groups = Group.objects.filter(name=ANNOTATORS_GROUP, user=instance)
        if action == "pre_remove":
            groups = groups.filter(pk__in=pk_set or ())
        if groups.exists():
            raise_access_epoch(instance.pk)
            _release(instance.pk)
        return
    if instance.name != ANNOTATORS_GROUP:  # group.user_set.remove(...) / clear(): instance is the group
        return
    members = instance.user_set.all()
    if action == "pre_remove":
        members = members.filter(pk__in=pk_set or ())
    for user_id in members.values_list("pk", flat=True):
        raise_access_epoch(user_id)
        _release(user_id)


def watch_accounts() -> None:
    """Connect the receivers above (once; ``AnnotationConfig.ready``)."""
    from django.contrib.auth.signals import user_logged_in
    from django.db.models.signals import m2m_changed, pre_save

    user_model = get_user_model()
    user_logged_in.connect(_bind_login_to_epoch, dispatch_uid="annotation.accounts.login")
    for sender in (user_model, Account):  # a proxy's save names the proxy as its sender
        pre_save.connect(
            _raise_on_lost_rights, sender=sender, dispatch_uid=f"annotation.accounts.state.{sender.__name__}"
        )
    m2m_changed.connect(
        _raise_on_leaving_annotators, sender=user_model.groups.through, dispatch_uid="annotation.accounts.groups"
    )

"""Account state that ends sessions and one-time links for good: the access epoch.

Reactivate an account, or make it staff and back, and Django lets an old session or password-reset
link work again. So every account carries an *access epoch*, raised whenever its active, staff or
superuser status changes or it leaves the annotators group (:func:`watch_accounts`; not
``QuerySet.update``, which sends no signal); the session hash (read by :class:`AccountBackend`) and
one-time links' tokens (:data:`access_token_generator`) cover it. Such an account also gives back the
HITs it held. An epoch never raised hashes as Django does.
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


def accounts():
    """Every user as an ``Account`` with its access epoch, read in the same statement."""
    from django.db.models import OuterRef

    rows = AccountState.objects.filter(user_id=OuterRef("pk")).order_by().values("access_epoch")[:1]
    return Account.objects.annotate(access_epoch=Coalesce(Subquery(rows, output_field=IntegerField()), Value(0)))


def _session_account_rows(pk: int):
    """The session's user with its access epoch and its role in every research group, in one statement."""
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
    """End every session and one-time link of the account made until now, for good; one ``UPDATE``
    so that concurrent raises both count."""
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
    """``user_logged_in``: the new session's hash covers the account's epoch, however it logged in
    (``login()`` hashed the plain ``User`` it was given)."""
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


#: The annotators' group and what gives a user's held HITs back, told at start-up (:func:`watch_annotators`).
_ANNOTATORS: dict[str, Any] = {"group": None, "release": None}


def watch_annotators(group: str, release: Callable[[int], None]) -> None:
    """Leaving ``group`` or being deactivated ends a user's rights to the HITs they hold: ``release(user_id)``
    (called by the in-house platform's ``ready()``)."""
    _ANNOTATORS.update(group=group, release=release)


def _release(user_id: int) -> None:
    if _ANNOTATORS["release"] is not None:
        _ANNOTATORS["release"](user_id)


def _raise_on_leaving_annotators(sender, instance, action, reverse, model, pk_set, **kwargs) -> None:
    """``m2m_changed`` of users' groups: leaving the annotators group raises the epoch and releases the HITs held."""
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

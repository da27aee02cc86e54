"""What the shared app reads: the connections to outside services in force, and research groups.

**Connections** (``core.connection_kinds``). Every client reads its connection at use time through
one function (``chat_settings``, ``huggingface_settings``; a platform's in its app), so a connection
set on the site is used by the next call, without a restart. Field by field, an environment
variable that is set (or a Django setting given a non-default value) beats the value stored on the
site, which beats the default. A stored secret is opened (:mod:`core.sealing`) only when asked
for, so a key that cannot open it fails only the call that needs it.

**Research groups.** Pages and endpoints are scoped without asking (``core.models.GroupScopedManager``).
These functions are for what is decided explicitly: a role required on an object already found,
and user accounts, which have no study to be scoped by.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db.models import Model, QuerySet

from core import methods
from core.connection_kinds import CHAT, HUGGINGFACE, KINDS, ZENODO, ConnectionField, ConnectionKind, hint
from core.models import (
    ROLE_RANK,
    ChangelogAcknowledgement,
    Connection,
    Job,
    Membership,
    ResearchGroup,
    roles_of,
    scope_of,
)
from core.sealing import KEY_FILE, KEY_SETTING, SealError, key_in_file, unseal
from core.web.permissions import can_manage_connections

#: Where a field's value in force comes from.
ENVIRONMENT, SITE, DEFAULT, UNSET = "environment", "site", "default", "unset"


def connections_key() -> str:
    """``CONNECTIONS_KEY`` from the settings (read at use time), else the key made in the site's data
    folder; empty when neither is there yet."""
    return getattr(settings, KEY_SETTING, "") or key_in_file(connections_key_file(), create=False)


def connections_key_file() -> Path:
    """Where the key is made when ``CONNECTIONS_KEY`` is not set: ``VAR_DIR/connections.key``."""
    return Path(settings.VAR_DIR) / KEY_FILE


def environment_value(spec: ConnectionField) -> str | None:
    """The field's value when the environment sets it (a variable not empty, or a Django setting
    that differs from the declared default), else ``None``; fields without a setting are read
    from the environment at call time."""
    if hasattr(settings, spec.setting):
        value = str(getattr(settings, spec.setting) or "")
        if os.environ.get(spec.setting) or value != spec.default:
            return value
        return None
    value = os.environ.get(spec.setting, "")
    return value or None


@dataclass(frozen=True)
class FieldState:
    """One field as in force: its ``source``, ``shown`` for a page (a secret's last four characters
    at most) and whether the site ``stored`` a value."""

    spec: ConnectionField
    source: str
    shown: str
    stored: bool


@dataclass
class ConnectionState:
    """A connection as in force (see the module docstring); :meth:`value` gives a field's value."""

    kind: ConnectionKind
    row: Connection | None
    fields: tuple[FieldState, ...]
    _values: dict[str, str] = field(repr=False)
    #: Why the stored secrets cannot be read (a key problem), or "".
    problem: str = ""

    def value(self, name: str) -> str:
        """The value in force of field ``name``; a stored secret that cannot be opened raises :class:`SealError`."""
        if name not in self._values:
            raise SealError(f"{self.kind.title}: {self.problem}")
        return self._values[name]

    def secret(self, name: str) -> Callable[[], str]:
        return lambda: self.value(name)

    def __getattr__(self, name: str) -> str:
        """A field's value in force as an attribute (``huggingface_settings().token``), read when asked."""
        if name.startswith("_") or name not in {f.name for f in self.kind.fields}:
            raise AttributeError(name)
        return self.value(name)

    @property
    def configured(self) -> bool:
        """Whether every plain field has a value (the chat pre-labeller runs with an endpoint and a model)."""
        return all(self._values.get(f.name) for f in self.kind.fields if not f.secret)

    @property
    def last_test(self):
        return self.row.last_test if self.row is not None else None


def connection_state(kind: str) -> ConnectionState:
    """The connection ``kind`` as in force now (one query; a stored secret opened only if in force)."""
    spec = KINDS[kind]
    row = next(iter(Connection.objects.filter(kind=kind)[:1]), None)
    stored_plain = dict(row.values) if row is not None else {}
    environment = {f.name: environment_value(f) for f in spec.fields}
    secrets: dict[str, str] = {}
    problem = ""
    stored_secret_names: set[str] = set()
    if row is not None and row.sealed:
        try:
            secrets = unseal(row.sealed, connections_key())
            stored_secret_names = set(secrets)
        except SealError as exc:
            problem = str(exc)
            stored_secret_names = set(spec.secret_names)  # held, unreadable
    values: dict[str, str] = {}
    states = []
    for f in spec.fields:
        stored_value = secrets.get(f.name, "") if f.secret else str(stored_plain.get(f.name) or "")
        stored = f.name in stored_secret_names if f.secret else bool(stored_value)
        if environment[f.name] is not None:
            source, value = ENVIRONMENT, environment[f.name]
        elif stored and f.secret and problem:
            source, value = SITE, None
        elif stored_value:
            source, value = SITE, stored_value
        elif f.default:
            source, value = DEFAULT, f.default
        else:
            source, value = UNSET, ""
        if value is not None:
            values[f.name] = value
        if f.secret:
            shown = hint(value) if value else ("cannot be read with the current key" if value is None else "")
        else:
            shown = value or ""
        states.append(FieldState(f, source, shown, stored))
    return ConnectionState(spec, row, tuple(states), values, problem)


def connection_states() -> list[ConnectionState]:
    """Every declared connection as in force, in the declared order."""
    return [connection_state(kind) for kind in KINDS]


def chat_settings() -> ConnectionState:
    """The language-model connection in force (``api_url``, ``model``, ``api_key``, ``token_limit``,
    ``answer_format``): the chat pre-labeller reads it here, at use time."""
    return connection_state(CHAT.kind)


def huggingface_settings() -> ConnectionState:
    """The Hugging Face connection in force (``endpoint``, ``token``): ``publish_dataset --push`` reads it here, at use time."""
    return connection_state(HUGGINGFACE.kind)


def zenodo_settings() -> ConnectionState:
    """The Zenodo connection in force (``api_url``, ``token``): the ``zenodo_deposit`` command reads it here, at use time."""
    return connection_state(ZENODO.kind)


# --- research groups ---------------------------------------------------------------------------


def groups_of(user) -> QuerySet[ResearchGroup]:
    """The groups ``user`` belongs to (every group for a superuser; the only one on a one-group site)."""
    return ResearchGroup.objects.filter(pk__in=list(roles_of(user)))


def group_of(obj: Model) -> ResearchGroup | None:
    """The research group a study object belongs to: its own, or its owner's along ``scope_via``."""
    while getattr(obj, "scope_via", None):
        obj = getattr(obj, obj.scope_via)
    if isinstance(obj, ResearchGroup):
        return obj
    return getattr(obj, "group", None)


def role_in(user, group: ResearchGroup | int | None) -> str | None:
    """``user``'s role in ``group`` (``None``: not a member)."""
    if group is None:
        return None
    return roles_of(user).get(group if isinstance(group, int) else group.pk)


def require_role(user, obj: Model | ResearchGroup, role: str) -> None:
    """Refuse (403) unless ``user`` holds at least ``role`` (viewer < researcher < owner) in ``obj``'s
    group; for objects already found, whose existence is no secret."""
    group = obj if isinstance(obj, ResearchGroup) else group_of(obj)
    held = role_in(user, group)
    if ROLE_RANK.get(held, 0) < ROLE_RANK[role]:
        raise PermissionDenied(f"This needs the role {role} in the research group {group}.")


def require_account_manager(by, account) -> None:
    """Refuse (403) unless ``by`` may manage ``account`` (reset its access, deactivate or reactivate it).

    ``None`` (the command line) and a superuser may; an account of one group, its researchers and
    owners; an account of several groups only an owner of each (a researcher of one who reset its
    password would read the other group's work); an account of no group, a superuser only."""
    if by is None or by.is_superuser:
        return
    groups = set(Membership.objects.filter(user_id=account.pk).values_list("group_id", flat=True))
    roles = roles_of(by)
    if len(groups) > 1:
        if all(roles.get(g) == Membership.Role.OWNER for g in groups):
            return
        raise PermissionDenied(
            f"{account.get_username()!r} belongs to several research groups: only a superuser, or an owner "
            "of every one of them, manages the account"
        )
    needed = ROLE_RANK[Membership.Role.RESEARCHER]
    if not groups or ROLE_RANK.get(roles.get(next(iter(groups))), 0) < needed:
        raise PermissionDenied(f"{account.get_username()!r} is not an annotator of a research group you manage")


#: Jobs whose records only those who manage the site's connections read: a connection's test (its
#: message names the account behind the site's credentials, e.g. the Prolific account's e-mail).
CONNECTION_JOB_KINDS = frozenset({"core.test_connection"})


def jobs_for(user) -> QuerySet:
    """The jobs ``user`` may read: a connection's test only if they manage connections."""
    jobs = Job.objects.all()
    return jobs if can_manage_connections(user) else jobs.exclude(kind__in=CONNECTION_JOB_KINDS)


def scope_users(queryset: QuerySet) -> QuerySet:
    """User accounts narrowed to the current scope's groups: a researcher manages their groups' annotators only."""
    scope = scope_of()
    if scope is None:
        return queryset
    return queryset.filter(pk__in=Membership.objects.filter(group_id__in=scope).values("user_id"))


def members(group: ResearchGroup) -> QuerySet[Membership]:
    """The group's members with their roles, by username."""
    return group.memberships.select_related("user").order_by("user__username")


#: The list of method changes that move a figure (core.methods), at the checkout's root.
CHANGELOG = Path(__file__).resolve().parent.parent / "CHANGELOG.md"


def changelog_entries() -> list:
    """CHANGELOG.md's entries, newest first (none without the file)."""
    try:
        return methods.changelog_entries(CHANGELOG.read_text(encoding="utf-8"))
    except OSError:
        return []


def unacknowledged_changes(user) -> list:
    """The CHANGELOG.md entries newer than the last one ``user`` acknowledged (all of them if none)."""
    entries = changelog_entries()
    seen = ChangelogAcknowledgement.objects.filter(user=user).values_list("heading", flat=True).first()
    headings = [entry.heading for entry in entries]
    return entries[: headings.index(seen)] if seen in headings else entries

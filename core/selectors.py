"""Reads of research groups: who may see and do what (the one scope of pages, API, exports, commands).

Pages and endpoints are scoped without asking: every study model's default manager reads within
the request's groups (``core.models.GroupScopedManager``, set by ``core.web.middleware.group_scope``).
These functions are for what is decided explicitly: a role required for an action on an object
already found, another user's queryset (a report written for someone), and user accounts, which
have no study of their own to be scoped by.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.db.models import Model, QuerySet

from core.models import ROLE_RANK, Membership, ResearchGroup, roles_of, scope_of


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


def visible_to(user, queryset: QuerySet) -> QuerySet:
    """``queryset`` narrowed to what ``user`` may read (their groups), whoever is asking now."""
    if user.is_superuser:
        return queryset
    ids = list(roles_of(user))
    model = queryset.model
    via = getattr(model, "scope_via", None)
    if via is None:
        return queryset.filter(group_id__in=ids)
    owner = model._meta.get_field(via).related_model
    return queryset.filter(**{f"{via}__in": visible_to(user, owner._base_manager.all()).values("pk")})


def require_role(user, obj: Model | ResearchGroup, role: str) -> None:
    """Refuse (403) unless ``user`` holds at least ``role`` (viewer < researcher < owner) in ``obj``'s group.

    For objects already found (so their existence is no secret): ``PermissionDenied`` answers 403
    on pages and in the API alike."""
    group = obj if isinstance(obj, ResearchGroup) else group_of(obj)
    held = role_in(user, group)
    if ROLE_RANK.get(held, 0) < ROLE_RANK[role]:
        raise PermissionDenied(f"This needs the role {role} in the research group {group}.")


def scope_users(queryset: QuerySet) -> QuerySet:
    """User accounts (annotators) narrowed to the current scope's groups: a researcher manages the
    annotators of their groups only. Unscoped (one group, a superuser, a command): all."""
    scope = scope_of()
    if scope is None:
        return queryset
    return queryset.filter(pk__in=Membership.objects.filter(group_id__in=scope).values("user_id"))


def members(group: ResearchGroup) -> QuerySet[Membership]:
    """The group's members with their roles, by username."""
    return group.memberships.select_related("user").order_by("user__username")

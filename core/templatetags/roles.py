"""``{% if request.user|may_act:batch %}``: whether a page shows a button that changes ``batch``; a
viewer is not shown a form whose POST would be refused (the rule of :func:`core.models.scope_of`).
"""

from __future__ import annotations

from django import template

from core.models import ROLE_RANK, Membership, roles_of
from core.web.permissions import can_manage_connections

register = template.Library()


@register.filter
def may_act(user, obj=None) -> bool:
    """Whether ``user`` may change ``obj`` (a study object, an account, or ``None``: anything at all)."""
    if user is None or not user.is_authenticated:
        return False
    if user.is_superuser:
        return True
    roles = roles_of(user)
    acting = {group for group, role in roles.items() if ROLE_RANK.get(role, 0) >= ROLE_RANK[Membership.Role.RESEARCHER]}
    if obj is None:
        return bool(acting)
    if hasattr(obj, "group_id"):
        return obj.group_id is None or obj.group_id in acting
    if hasattr(obj, "research_memberships"):  # an account: acting in any group it belongs to
        groups = set(obj.research_memberships.values_list("group_id", flat=True))
        return bool(groups & acting) or (not groups and bool(acting))
    return bool(acting)


#: Whether the Connections page opens for ``user``: the menu links to it for them alone.
register.filter("may_manage_connections", can_manage_connections)

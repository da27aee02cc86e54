"""Research groups changed: made, joined, roles set, members removed, a user's working group chosen.

Managing members needs the owner's role (:func:`core.selectors.require_role`); a superuser makes
groups. The first group beyond the site's default turns the implicit membership of a one-group
site (every staff account its owner) into rows, so nobody loses their studies when it appears.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.text import slugify

from core.errors import ServiceError
from core.models import Membership, ResearchGroup, creation_group, default_group
from core.selectors import require_role


@transaction.atomic
def create_group(name: str, *, owner=None) -> ResearchGroup:
    """A new research group (``owner``, if given, becomes its owner)."""
    name = name.strip()
    slug = slugify(name)[:50]
    if not name or not slug:
        raise ServiceError("name: a research group needs a name with letters or digits")
    if ResearchGroup.objects.filter(name=name).exists() or ResearchGroup.objects.filter(slug=slug).exists():
        raise ServiceError(f"name: a research group {name!r} exists already")
    if ResearchGroup.objects.count() <= 1:
        _make_implicit_memberships_explicit()
    group = ResearchGroup.objects.create(name=name, slug=slug)
    if owner is not None:
        Membership.objects.update_or_create(user=owner, group=group, defaults={"role": Membership.Role.OWNER})
    return group


def _make_implicit_memberships_explicit() -> None:
    """Every staff account without membership becomes owner of the site's group, every in-house
    annotator without one its annotator (as they were, implicitly, on a one-group site)."""
    group = default_group()
    users = get_user_model().objects.filter(research_memberships=None)
    staff = users.filter(is_staff=True, is_superuser=False)
    annotators = users.filter(is_staff=False, is_superuser=False, annotation_identity__provider="local")
    Membership.objects.bulk_create(
        [Membership(user=u, group=group, role=Membership.Role.OWNER) for u in staff]
        + [Membership(user=u, group=group, role=Membership.Role.ANNOTATOR) for u in annotators],
        ignore_conflicts=True,
    )


def set_member(by, group: ResearchGroup, username: str, role: str) -> Membership:
    """``username`` gets ``role`` in ``group`` (added if new); only an owner of the group may
    (``by`` None: the server's operator, from the command line)."""
    if by is not None:
        require_role(by, group, Membership.Role.OWNER)
    if role not in Membership.Role.values:
        raise ServiceError(f"role: one of {', '.join(Membership.Role.values)}, not {role!r}")
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ServiceError(f"username: no account {username!r}")
    if role == Membership.Role.ANNOTATOR and user.is_staff:
        raise ServiceError(f"role: {username!r} is a staff account, not an annotator")
    with transaction.atomic():
        if ResearchGroup.objects.count() <= 1:
            _make_implicit_memberships_explicit()
        if by is not None and not by.is_superuser:
            _refuse_another_groups_account(by, group, user)
        was_owner = group.memberships.filter(user=user, role=Membership.Role.OWNER).exists()
        membership, _ = Membership.objects.update_or_create(user=user, group=group, defaults={"role": role})
        if was_owner:
            _keep_an_owner(group)
    return membership


def _refuse_another_groups_account(by, group: ResearchGroup, user) -> None:
    """An owner brings in accounts of no group, or of groups they own themselves: an account of
    another group (its annotator, say) would otherwise come under this group's team pages, where
    its access can be reset and its work taken over. The operator (``manage.py research_group``)
    or a superuser joins accounts across groups."""
    others = set(Membership.objects.filter(user=user).exclude(group=group).values_list("group_id", flat=True))
    owned = set(Membership.objects.filter(user=by, role=Membership.Role.OWNER).values_list("group_id", flat=True))
    if others - owned:
        raise ServiceError(
            f"username: {user.get_username()!r} belongs to another research group; ask the site's operator "
            "(manage.py research_group) to add them"
        )


def remove_member(by, group: ResearchGroup, username: str) -> None:
    """``username`` leaves ``group``; only an owner may (``by`` None: the operator), and the last owner stays."""
    if by is not None:
        require_role(by, group, Membership.Role.OWNER)
    with transaction.atomic():
        leaving = Membership.objects.filter(group=group, user__username=username)
        was_owner = leaving.filter(role=Membership.Role.OWNER).exists()
        leaving.delete()
        if was_owner:
            _keep_an_owner(group)


def _keep_an_owner(group: ResearchGroup) -> None:
    if not group.memberships.filter(role=Membership.Role.OWNER).exists():
        raise ServiceError("role: a research group keeps at least one owner")


def join_current_group(user, role: str = Membership.Role.ANNOTATOR) -> None:
    """``user`` (a new annotator) joins the group of whoever makes them (:func:`core.models.creation_group`)."""
    Membership.objects.get_or_create(user=user, group=creation_group(), defaults={"role": role})


def choose_group(request, group: ResearchGroup) -> None:
    """The group new studies of this session go to (the user must be a member)."""
    require_role(request.user, group, Membership.Role.VIEWER)
    request.session["research_group"] = group.pk

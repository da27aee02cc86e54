"""Research groups changed: made, joined, roles set, members removed, a user's working group chosen.

Managing members needs the owner's role; the operator (``manage.py research_group``, ``by=None``)
makes groups and their first owners. No change touches another membership.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.text import slugify

from core.db.scope import acting_in
from core.errors import ServiceError
from core.models import Membership, ResearchGroup, creation_group
from core.selectors import require_role
from core.services.usernames import new_username

#: Roles of staff accounts (researchers' side); an annotator's account is no staff.
STAFF_ROLES = (Membership.Role.OWNER, Membership.Role.RESEARCHER, Membership.Role.VIEWER)


@transaction.atomic
def create_group(name: str, *, owner=None) -> ResearchGroup:
    """A new research group (``owner``, if given, becomes its owner); nobody else's role changes."""
    name = name.strip()
    slug = slugify(name)[:50]
    if not name or not slug:
        raise ServiceError("name: a research group needs a name with letters or digits")
    limit = ResearchGroup._meta.get_field("name").max_length
    if len(name) > limit:
        raise ServiceError(f"name: at most {limit} characters, not {len(name)}")
    if ResearchGroup.objects.filter(name=name).exists() or ResearchGroup.objects.filter(slug=slug).exists():
        raise ServiceError(f"name: a research group {name!r} exists already")
    group = ResearchGroup.objects.create(name=name, slug=slug)
    if owner is not None:
        if not owner.is_staff:
            raise ServiceError(f"owner: {owner.get_username()!r} is not a researcher's (staff) account")
        Membership.objects.update_or_create(user=owner, group=group, defaults={"role": Membership.Role.OWNER})
    return group


def new_account(username: str, role: str):
    """A new account for ``role`` with a generated password (returned, to be shown once); staff for owner,
    researcher and viewer."""
    username = new_username(username)
    password = secrets.token_urlsafe(15)
    user = get_user_model().objects.create_user(username, password=password, is_staff=role in STAFF_ROLES)
    return user, password


@transaction.atomic
def create_group_with_owner(name: str, owner: str) -> tuple[ResearchGroup, str | None]:
    """The group and its first owner, the account made (its password returned once) if there is none."""
    user = get_user_model().objects.filter(username=owner).first()
    password = None
    if user is None:
        user, password = new_account(owner, Membership.Role.OWNER)
    return create_group(name, owner=user), password


#: Makes an in-house annotator's account (username, password): the annotation app's, given at start-up
#: (:func:`use_annotator_maker`; core imports no app above it).
_annotator_maker: Callable[[str, str], object] | None = None


def use_annotator_maker(make: Callable[[str, str], object]) -> None:
    """``make(username, password)`` makes an in-house annotator who joins the acting group."""
    global _annotator_maker
    _annotator_maker = make


def staff_of_no_group():
    """Active staff accounts that are no superuser and belong to no group: on a site of several groups
    they see nothing (on a site of one, they are its owners without a membership row)."""
    return (
        get_user_model()
        .objects.filter(is_staff=True, is_superuser=False, is_active=True, research_memberships=None)
        .order_by("username")
    )


def _check_request(by, group: ResearchGroup, role: str) -> None:
    """Only an owner of ``group`` (or the operator, ``by`` None) sets a known role."""
    if by is not None:
        require_role(by, group, Membership.Role.OWNER)
    if role not in Membership.Role.values:
        raise ServiceError(f"role: one of {', '.join(Membership.Role.values)}, not {role!r}")


def set_member(by, group: ResearchGroup, username: str, role: str) -> Membership:
    """``username`` gets ``role`` in ``group`` (added if new); only an owner of the group may."""
    _check_request(by, group, role)
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ServiceError(f"username: no account {username!r}")
    if role == Membership.Role.ANNOTATOR and user.is_staff:
        raise ServiceError(f"role: {username!r} is a staff account, not an annotator")
    if role in STAFF_ROLES and not user.is_staff:
        raise ServiceError(f"role: {username!r} is an annotator's account; a {role} needs a researcher's account")
    with transaction.atomic():
        if by is not None and not by.is_superuser:
            _refuse_another_groups_account(by, group, user)
        was_owner = group.memberships.filter(user=user, role=Membership.Role.OWNER).exists()
        membership, _ = Membership.objects.update_or_create(user=user, group=group, defaults={"role": role})
        if was_owner:
            _keep_an_owner(group)
    return membership


@transaction.atomic
def add_member(by, group: ResearchGroup, username: str, role: str) -> tuple[Membership, str | None]:
    """:func:`set_member`, the account made first when there is none by that name (its generated
    password returned, to be shown once)."""
    _check_request(by, group, role)
    password = None
    if not get_user_model().objects.filter(username=username).exists():
        if role == Membership.Role.ANNOTATOR:
            if _annotator_maker is None:
                raise ServiceError("role: this site makes no annotator accounts")
            password = secrets.token_urlsafe(15)
            with acting_in(group.pk):  # the annotator joins this group
                _annotator_maker(username, password)
        else:
            _, password = new_account(username, role)
    return set_member(by, group, username, role), password


def _refuse_another_groups_account(by, group: ResearchGroup, user) -> None:
    """An owner brings in accounts of no group or of groups they own, else another group's annotator
    would come under this group's pages, its access reset; the operator or a superuser may."""
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

"""Who may see what: researchers (staff) see their research groups' studies (core.models scopes every query), annotators only their own work."""

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied

from core.models import Membership, ResearchGroup, default_group, roles_of


def researcher_required(view):
    """Staff only: visitors are sent to the login page, logged-in annotators get 403."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not (request.user.is_active and request.user.is_staff):
            raise PermissionDenied("This page is for researchers.")
        return view(request, *args, **kwargs)

    return wrapper


def can_manage_connections(user) -> bool:
    """Whether ``user`` may see, set and test the site's connections to outside services (Prolific,
    the language model, the Hub): they spend money and publish in the lab's name, and every research
    group's studies use them. So: a superuser; on a site with one research group (as every site
    starts), that group's owners, which are its staff; on a site with several, superusers only, as
    no group's owner may change what the other groups' studies use (docs/deployment.md)."""
    if not (user.is_authenticated and user.is_active and user.is_staff):
        return False
    if user.is_superuser:
        return True

    if ResearchGroup.objects.count() > 1:
        return False
    return roles_of(user).get(default_group().pk) == Membership.Role.OWNER


def connections_manager_required(view):
    """:func:`can_manage_connections` only: visitors are sent to the login page, others get 403."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not can_manage_connections(request.user):
            raise PermissionDenied("This page is for the researchers who manage the site's connections.")
        return view(request, *args, **kwargs)

    return wrapper

"""Who may see what: researchers (staff) see their research groups' studies (core.models scopes every query), annotators only their own work."""

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied

from core.models import Membership, ResearchGroup, default_group, roles_of


def _only(allowed, refusal: str):
    """A view decorator: visitors are sent to the login page, users ``allowed(user)`` refuses get 403."""

    def decorate(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not allowed(request.user):
                raise PermissionDenied(refusal)
            return view(request, *args, **kwargs)

        return wrapper

    return decorate


#: Staff only.
researcher_required = _only(lambda user: user.is_active and user.is_staff, "This page is for researchers.")


def can_manage_connections(user) -> bool:
    """Whether ``user`` may see, set and test the site's connections to outside services: they spend
    money and publish in the lab's name for every group. So a superuser, and on a site of one research
    group its owners; on a site of several, superusers only (docs/deployment.md)."""
    if not (user.is_authenticated and user.is_active and user.is_staff):
        return False
    if user.is_superuser:
        return True
    if ResearchGroup.objects.count() > 1:
        return False
    return roles_of(user).get(default_group().pk) == Membership.Role.OWNER


connections_manager_required = _only(
    can_manage_connections, "This page is for the researchers who manage the site's connections."
)

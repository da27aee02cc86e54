"""Who may see what: researchers (staff) see their research groups' studies (core.models scopes every query), annotators only their own work."""

from functools import wraps

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied


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

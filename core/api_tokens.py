"""API tokens of researchers (DRF's authtoken): one per account, shown once to its owner.

A token is a password for scripts: it is handed only to staff accounts (researchers),
who may reach every endpoint; annotators work on the site and have no use for one.
Renewing deletes the old token first, so a leaked one stops working at once.
"""

from __future__ import annotations

from django.db import transaction

from .errors import ServiceError


@transaction.atomic
def api_token(user, *, renew: bool = False) -> str:
    """The user's API token (created on first use); ``renew`` replaces it with a new one."""
    from rest_framework.authtoken.models import Token

    if not (user.is_active and user.is_staff):
        raise ServiceError(f"{user.get_username()!r} is not an active researcher (staff) account; no API token")
    if renew:
        Token.objects.filter(user=user).delete()
    token, _ = Token.objects.get_or_create(user=user)
    return token.key

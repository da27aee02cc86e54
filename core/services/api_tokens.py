"""API tokens of researchers (staff accounts only): one per account, stored hashed, shown once,
throttled on failure.

- **Stored as a digest.** The key is 160 random bits (DRF's old token format); the database keeps
  its SHA-256 and first 8 characters for the lookup. A plain hash suffices for a random key (unlike
  a password), and unlike an HMAC with ``SECRET_KEY`` survives rotating that key.
- **Shown once.** :func:`api_token` returns the key when it makes it; asking again refuses unless
  ``renew``, which deletes the old token first.
- **Refused without staff status**, checked on every request; losing it deletes the token.
- **Throttled on failure.** A client whose token headers failed too often (``bad_api_token``)
  gets 429 until the window passes (:class:`TokenAuthentication`).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import string
from datetime import timedelta

from django.db import transaction
from django.utils import timezone
from rest_framework import authentication, exceptions, throttling

from core.errors import ServiceError
from core.models import ApiToken
from core.web.client_ip import client_ip

#: Hex digits of a key: 160 random bits, like DRF's tokens, so migrated keys keep working.
KEY_LENGTH = 40
#: Characters of the key stored in the clear to find its row (32 of its 160 bits).
LOOKUP_LENGTH = 8


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _is_researcher(user) -> bool:
    return user.is_active and user.is_staff


@transaction.atomic
def api_token(user, *, renew: bool = False, expires_in: timedelta | None = None) -> str:
    """Make the user's API token and return its key, the only time anyone sees it; refused when the
    user has an unexpired token, unless ``renew``. ``expires_in``: the new token's life (default: until revoked)."""
    if not _is_researcher(user):
        raise ServiceError(f"{user.get_username()!r} is not an active researcher (staff) account; no API token")
    existing = ApiToken.objects.select_for_update().filter(user=user).first()
    if existing is not None and not existing.expired() and not renew:
        raise ServiceError(
            f"{user.get_username()!r} already has an API token (made {existing.created:%Y-%m-%d %H:%M} UTC); "
            "it is shown only once, when made. Renew it (--renew, or the Token page) for a new key; the old one stops working."
        )
    ApiToken.objects.filter(user=user).delete()
    key = secrets.token_hex(KEY_LENGTH // 2)
    ApiToken.objects.create(
        user=user,
        lookup=key[:LOOKUP_LENGTH],
        digest=_digest(key),
        expires=timezone.now() + expires_in if expires_in is not None else None,
    )
    return key


@transaction.atomic
def revoke_api_token(user) -> bool:
    """Delete the user's API token; whether there was one."""
    deleted, _ = ApiToken.objects.filter(user=user).delete()
    return bool(deleted)


def revoke_unless_researcher(sender, instance, update_fields=None, **kwargs) -> None:
    """``post_save`` of the user model: an account saved without active staff status loses its token,
    so it does not work again when the status comes back."""
    if update_fields is not None and not {"is_active", "is_staff"} & set(update_fields):
        return  # e.g. last_login on every login
    if not _is_researcher(instance):
        ApiToken.objects.filter(user=instance).delete()


def token_of(user) -> ApiToken | None:
    """The user's token record (no key: only its dates), for the token page."""
    return ApiToken.objects.filter(user=user).first()


def token_for_key(key: str) -> ApiToken | None:
    """The unexpired token of an active researcher whose key this is, or None; anything but 40 hex
    digits is no key, and the database is not asked."""
    if len(key) != KEY_LENGTH or key.strip(string.hexdigits):
        return None
    digest = _digest(key)
    now = timezone.now()
    for token in ApiToken.objects.filter(lookup=key[:LOOKUP_LENGTH]).select_related("user"):
        if hmac.compare_digest(token.digest, digest):
            return token if not token.expired(now) and _is_researcher(token.user) else None
    return None


class BadTokenThrottle(throttling.SimpleRateThrottle):
    """Counts a client's failed token headers (not its requests) in DRF's sliding window."""

    scope = "bad_api_token"

    def get_cache_key(self, request, view=None) -> str:
        return self.cache_format % {"scope": self.scope, "ident": client_ip(request)}

    def exhausted(self, request) -> bool:
        """Whether the client has used up its failures, without counting this request."""
        self.key = self.get_cache_key(request)
        self.history = self.cache.get(self.key, [])
        self.now = self.timer()
        while self.history and self.history[-1] <= self.now - self.duration:
            self.history.pop()
        return len(self.history) >= self.num_requests

    def record_failure(self, request) -> None:
        if not self.exhausted(request):
            self.throttle_success()


class TokenAuthentication(authentication.TokenAuthentication):
    """``Authorization: Token <key>`` against the hashed tokens, throttled on failure: DRF throttles
    only after authentication, so this class counts failures itself and answers 429 first."""

    keyword = "Token"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        throttle = BadTokenThrottle()
        if throttle.exhausted(request):
            raise exceptions.Throttled(wait=throttle.wait())
        try:
            return super().authenticate(request)
        except exceptions.AuthenticationFailed:
            throttle.record_failure(request)
            raise

    def authenticate_credentials(self, key: str):
        token = token_for_key(key)
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        return token.user, token

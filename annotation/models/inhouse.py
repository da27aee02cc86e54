"""State of in-house annotators' accounts: the access epoch that ends sessions and one-time links for good."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import User
from django.db import models
from django.utils.crypto import salted_hmac


class AccountState(models.Model):
    """Any account's access epoch (annotators and researchers alike): see ``annotation.accounts``.

    Its own row per user, made when the epoch is first raised, so a researcher (no worker
    identity) is covered as an annotator is; no row reads as epoch 0.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="account_state"
    )
    access_epoch = models.PositiveIntegerField(
        default=0,
        help_text="Raised whenever the account's rights change (active, staff, superuser, annotators group): "
        "every session and one-time link made before stops working for good (annotation.accounts).",
    )

    def __str__(self) -> str:
        return f"access epoch {self.access_epoch} of user #{self.user_id}"


class Account(User):
    """A user as the site's sessions and one-time links know them: bound to the account's access epoch.

    ``annotation.accounts.AccountBackend`` reads every session's user as an ``Account`` with
    ``access_epoch`` (its ``AccountState``'s, 0 without one) in the same statement, and
    the session hash Django checks on each request covers it: raising the epoch ends every
    session opened before, and a later reactivation does not bring them back. At epoch 0 the
    hash is Django's own, so sessions opened before the epoch existed keep working.
    """

    #: Overwritten by the backend's annotation; 0 for an object made any other way.
    access_epoch = 0

    class Meta:
        proxy = True

    def _get_session_auth_hash(self, secret=None) -> str:
        # Django's hook behind both get_session_auth_hash and its SECRET_KEY_FALLBACKS variant,
        # so a rotated key still verifies the sessions it made (the tests would fail, not
        # silently pass, if a Django upgrade renamed it: they check a session ends).
        base = super()._get_session_auth_hash(secret=secret)
        if not self.access_epoch:
            return base
        key_salt = "annotation.models.Account.get_session_auth_hash"
        return salted_hmac(key_salt, f"{base}:{self.access_epoch}", secret=secret, algorithm="sha256").hexdigest()

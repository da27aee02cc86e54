"""State of in-house annotators' accounts: the access epoch that ends sessions and one-time links for good."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import User
from django.db import models
from django.utils.crypto import salted_hmac


class AccountState(models.Model):
    """Any account's access epoch (``annotation.accounts``), made when first raised; no row reads as 0."""

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
    """A user as the site's sessions and one-time links know them: the session hash covers the access
    epoch (``annotation.accounts``); at epoch 0 it is Django's own."""

    #: Overwritten by the backend's annotation; 0 for an object made any other way.
    access_epoch = 0

    class Meta:
        proxy = True

    def _get_session_auth_hash(self, secret=None) -> str:
        # Django's hook behind get_session_auth_hash and its SECRET_KEY_FALLBACKS variant.
        base = super()._get_session_auth_hash(secret=secret)
        if not self.access_epoch:
            return base
        key_salt = "annotation.models.Account.get_session_auth_hash"
        return salted_hmac(key_salt, f"{base}:{self.access_epoch}", secret=secret, algorithm="sha256").hexdigest()

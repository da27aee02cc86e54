"""A password-reset e-mail's link ends for good when the account is deactivated, as a team's
one-time links do (annotation.accounts.access_token_generator), even after a reactivation."""

from __future__ import annotations

import importlib
import re

import pytest
from django.contrib.auth.models import Group
from django.core import mail
from django.test import Client
from django.urls import clear_url_caches

from platforms.inhouse.selectors import ANNOTATORS_GROUP


@pytest.fixture
def reset_by_email(settings):
    """The site as deployed with a mail server: config.urls serves the reset pages."""
    import config.urls

    settings.PASSWORD_RESET_BY_EMAIL = True
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    importlib.reload(config.urls)
    clear_url_caches()
    yield
    settings.PASSWORD_RESET_BY_EMAIL = False
    importlib.reload(config.urls)
    clear_url_caches()


def _mailed_link(client: Client, email: str) -> str:
    mail.outbox.clear()
    assert client.post("/accounts/password_reset/", {"email": email}).status_code == 302
    (message,) = mail.outbox
    return re.search(r"https?://[^/\s]+(/accounts/reset/\S+/)", message.body).group(1)


def _opens(link: str) -> bool:
    """Whether the link is accepted: Django redirects a valid one to its set-password page."""
    return Client().get(link).status_code == 302


def test_a_reset_link_mailed_before_a_deactivation_stays_dead_after_reactivation(reset_by_email, django_user_model):
    user = django_user_model.objects.create_user("ann", "ann@example.org", "pw-secret-123")
    user.groups.add(Group.objects.get_or_create(name=ANNOTATORS_GROUP)[0])
    client = Client()
    kept = _mailed_link(client, "ann@example.org")
    assert _opens(kept)  # a fresh link works
    ended = _mailed_link(client, "ann@example.org")

    user.is_active = False
    user.save()
    user.is_active = True
    user.save()
    assert not _opens(ended)  # Django's own tokens ignore is_active: the link used to open again here
    assert _opens(_mailed_link(client, "ann@example.org"))  # a link mailed after the reactivation works

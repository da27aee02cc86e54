"""Logging in: throttled after repeated wrong passwords; no password reset without a mail server."""

import pytest
from django.urls import NoReverseMatch, reverse


@pytest.mark.django_db
def test_wrong_passwords_lock_the_account_out_even_for_the_right_one(client, django_user_model, settings):
    django_user_model.objects.create_user("alice", password="the-right-pw-42")
    login = reverse("login")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        response = client.post(login, {"username": "alice", "password": "wrong-guess"})
        assert response.status_code in (200, 429)
    response = client.post(login, {"username": "alice", "password": "the-right-pw-42"})
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db
def test_a_right_password_before_the_limit_logs_in(client, django_user_model):
    django_user_model.objects.create_user("bob", password="the-right-pw-42")
    client.post(reverse("login"), {"username": "bob", "password": "wrong-guess"})
    response = client.post(reverse("login"), {"username": "bob", "password": "the-right-pw-42"})
    assert response.status_code == 302
    assert "_auth_user_id" in client.session


@pytest.mark.django_db
def test_without_a_mail_server_there_is_no_password_reset_page(client):
    with pytest.raises(NoReverseMatch):
        reverse("password_reset")
    assert client.get("/accounts/password_reset/").status_code == 404
    assert "Ask the researcher" in client.get(reverse("login")).content.decode()

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


def _guess(client, login, username, client_address, password="wrong-guess"):
    """A login as the proxy forwards it: REMOTE_ADDR is the proxy, the client's address last in X-Forwarded-For."""
    return client.post(
        login,
        {"username": username, "password": password},
        REMOTE_ADDR="127.0.0.1",
        HTTP_X_FORWARDED_FOR=client_address,
    )


@pytest.mark.django_db
def test_behind_the_proxy_strangers_guesses_do_not_lock_the_owner_out(client, django_user_model, settings):
    settings.BEHIND_TLS_PROXY = True
    django_user_model.objects.create_user("alice", password="the-right-pw-42")
    login = reverse("login")
    for attacker in range(12):
        # Each guesses from its own address, and may put anything before it (the proxy appends the real one).
        assert _guess(client, login, "alice", f"10.0.0.1, 203.0.113.{attacker}").status_code == 200
    owner = _guess(client, login, "alice", "198.51.100.7", password="the-right-pw-42")
    assert owner.status_code == 302 and "_auth_user_id" in client.session


@pytest.mark.django_db
def test_behind_the_proxy_one_client_guessing_is_still_locked_out(client, django_user_model, settings):
    settings.BEHIND_TLS_PROXY = True
    django_user_model.objects.create_user("alice", password="the-right-pw-42")
    login = reverse("login")
    for forged in range(12):
        # Forged entries before the proxy's own do not make the client someone else.
        response = _guess(client, login, "alice", f"192.0.2.{forged}, 203.0.113.9")
        assert response.status_code in (200, 429)
    assert response.status_code == 429
    assert _guess(client, login, "alice", "203.0.113.9", password="the-right-pw-42").status_code == 429
    assert "_auth_user_id" not in client.session
    # The lock-out is that client's (and that username's): the owner elsewhere still logs in.
    assert _guess(client, login, "alice", "198.51.100.7", password="the-right-pw-42").status_code == 302


@pytest.mark.django_db
def test_without_the_proxy_setting_a_forged_forwarded_for_does_not_escape_the_lockout(
    client, django_user_model, settings
):
    settings.BEHIND_TLS_PROXY = False
    django_user_model.objects.create_user("alice", password="the-right-pw-42")
    login = reverse("login")
    for forged in range(12):
        response = _guess(client, login, "alice", f"203.0.113.{forged}")
    assert response.status_code == 429
    assert _guess(client, login, "alice", "198.51.100.7", password="the-right-pw-42").status_code == 429
    assert "_auth_user_id" not in client.session


@pytest.mark.parametrize(
    ("behind_proxy", "forwarded_for", "expected"),
    [
        (False, "203.0.113.9", "127.0.0.1"),
        (True, "203.0.113.9", "203.0.113.9"),
        (True, "192.0.2.1,203.0.113.9", "203.0.113.9"),
        (True, "2001:db8::1", "2001:db8::1"),
        (True, "not-an-address", "127.0.0.1"),
        (True, "", "127.0.0.1"),
    ],
)
def test_the_client_address_is_the_one_the_proxy_appended(rf, settings, behind_proxy, forwarded_for, expected):
    from core.web.client_ip import client_ip

    settings.BEHIND_TLS_PROXY = behind_proxy
    request = rf.get("/", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=forwarded_for)
    assert client_ip(request) == expected


@pytest.mark.django_db
def test_without_a_mail_server_there_is_no_password_reset_page(client):
    with pytest.raises(NoReverseMatch):
        reverse("password_reset")
    assert client.get("/accounts/password_reset/").status_code == 404
    assert "Ask the researcher" in client.get(reverse("login")).content.decode()

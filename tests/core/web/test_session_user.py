"""A session seen before is read with its user in one statement (``core.web.sessions``), and that
read never decides whose the session is: the session's own data does, as in Django."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.sessions.models import Session
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotation.accounts import raise_access_epoch
from core.web import sessions


@pytest.fixture
def alice_and_bob(django_user_model):
    return [django_user_model.objects.create_user(name, password="the-right-pw-42") for name in ("alice", "bob")]


def _user_of_request(client):
    """The user of one request to a page without SQL of its own, and the statements that found it."""
    with CaptureQueriesContext(connection) as statements:
        response = client.get(reverse("login"))
        user = response.wsgi_request.user
        user_id = user.pk if user.is_authenticated else None
    return user_id, [s["sql"] for s in statements.captured_queries]


@pytest.mark.django_db
def test_a_session_seen_before_is_read_with_its_user_in_one_statement(client, alice_and_bob):
    alice, _ = alice_and_bob
    client.force_login(alice)
    first, first_statements = _user_of_request(client)  # the session and its user, one after the other
    again, statements = _user_of_request(client)
    assert first == again == alice.pk
    assert len(first_statements) == 2
    assert len(statements) == 1 and "django_session" in statements[0] and "auth_user" in statements[0]


@pytest.mark.django_db
def test_the_user_remembered_for_a_session_is_a_guess_never_the_answer(client, alice_and_bob):
    """Remembered wrongly (here on purpose), the session's own data still says whose it is."""
    alice, bob = alice_and_bob
    client.force_login(alice)
    _user_of_request(client)
    sessions._user_of_session[client.session.session_key] = bob.pk
    user_id, statements = _user_of_request(client)
    assert user_id == alice.pk
    assert len(statements) == 2  # the guessed statement, then alice read on her own


@pytest.mark.django_db
def test_an_expired_session_seen_before_is_not_taken(client, alice_and_bob):
    alice, _ = alice_and_bob
    client.force_login(alice)
    _user_of_request(client)
    Session.objects.filter(session_key=client.session.session_key).update(
        expire_date=dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    )
    assert _user_of_request(client)[0] is None


@pytest.mark.django_db
def test_a_raised_access_epoch_ends_a_session_seen_before(client, alice_and_bob):
    alice, _ = alice_and_bob
    client.force_login(alice)
    assert _user_of_request(client)[0] == alice.pk
    raise_access_epoch(alice.pk)
    assert _user_of_request(client)[0] is None


@pytest.mark.django_db
def test_a_login_rotates_the_session_and_the_old_key_finds_nobody(client, alice_and_bob):
    alice, bob = alice_and_bob
    client.force_login(alice)
    _user_of_request(client)
    old_key = client.session.session_key
    response = client.post(reverse("login"), {"username": "bob", "password": "the-right-pw-42"})
    assert response.status_code == 302
    assert client.session.session_key != old_key
    assert _user_of_request(client)[0] == bob.pk
    client.cookies["sessionid"] = old_key
    assert _user_of_request(client)[0] is None

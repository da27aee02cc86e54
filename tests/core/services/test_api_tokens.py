"""API tokens as secrets: stored hashed, shown once, expiring, revocable, for active
researchers only, throttled on failure, kept out of caches and the admin."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client
from django.utils import timezone

from core.models import ApiToken
from core.services.api_tokens import api_token

API = "/api/jobs/"
PAGE = "/accounts/api-token/"


@pytest.fixture
def researcher(django_user_model):
    return django_user_model.objects.create_user("researcher", password="pw-secret-123", is_staff=True)


def _get(key: str, **extra):
    return Client().get(API, HTTP_AUTHORIZATION=f"Token {key}", **extra)


def _works(key: str) -> bool:
    response = _get(key)
    assert response.status_code in (200, 403), response.content
    return response.status_code == 200


@pytest.mark.django_db
def test_only_the_keys_digest_is_stored(researcher):
    key = api_token(researcher)
    assert _works(key)
    row = ApiToken.objects.values().get(user=researcher)
    assert row["digest"] == hashlib.sha256(key.encode()).hexdigest()
    assert not any(key in str(value) for value in row.values())
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {ApiToken._meta.db_table}")
        assert not any(key in str(value) for record in cursor.fetchall() for value in record)


@pytest.mark.django_db
def test_the_page_shows_the_key_once_and_never_lets_it_be_cached(researcher):
    client = Client()
    client.force_login(researcher)
    before = client.get(PAGE)
    assert 'id="api-token"' not in before.content.decode() and "You have no token" in before.content.decode()
    made = client.post(PAGE, {"expires_days": ""})
    page = made.content.decode()
    key = page.split('<code id="api-token">')[1].split("</code>")[0]
    assert len(key) == 40 and _works(key)
    later = client.get(PAGE)
    assert key not in later.content.decode() and 'id="api-token"' not in later.content.decode()
    assert "You have a token" in later.content.decode() and "without expiry" in later.content.decode()
    for response in (before, made, later):
        assert "no-store" in response["Cache-Control"]
    replaced = client.post(PAGE, {}).content.decode()
    new_key = replaced.split('<code id="api-token">')[1].split("</code>")[0]
    assert new_key != key and _works(new_key) and not _works(key)


@pytest.mark.django_db
def test_the_page_is_for_researchers_only(django_user_model):
    annotator = django_user_model.objects.create_user("ann", password="pw-secret-123")
    client = Client()
    client.force_login(annotator)
    assert client.post(PAGE).status_code == 403
    assert not ApiToken.objects.exists()
    assert Client().get(PAGE).status_code == 302


@pytest.mark.django_db
def test_the_command_prints_the_key_once_and_renews_only_when_asked(researcher):
    out = StringIO()
    call_command("api_token", "researcher", stdout=out)
    key = out.getvalue().strip()
    assert _works(key)
    with pytest.raises(CommandError, match=r"already has an API token.*shown only once"):
        call_command("api_token", "researcher", stdout=StringIO())
    assert _works(key)  # refusing did not replace it
    renewed = StringIO()
    call_command("api_token", "researcher", "--renew", stdout=renewed)
    assert _works(renewed.getvalue().strip()) and not _works(key)


@pytest.mark.django_db
def test_an_expired_token_stops_working(researcher):
    out = StringIO()
    call_command("api_token", "researcher", "--expires-days", "2", stdout=out)
    key = out.getvalue().strip()
    token = ApiToken.objects.get(user=researcher)
    assert timedelta(days=2) - (token.expires - timezone.now()) < timedelta(minutes=1)
    assert _works(key)
    ApiToken.objects.filter(pk=token.pk).update(expires=timezone.now() - timedelta(seconds=1))
    assert not _works(key)
    # An expired token is no obstacle to a new one, and the page says it expired.
    client = Client()
    client.force_login(researcher)
    assert "expired" in client.get(PAGE).content.decode()
    page = client.post(PAGE, {"expires_days": "3"}).content.decode()
    assert _works(page.split('<code id="api-token">')[1].split("</code>")[0])
    assert ApiToken.objects.get(user=researcher).expires > timezone.now() + timedelta(days=2, hours=23)
    with pytest.raises(CommandError, match="at least 1"):
        call_command("api_token", "researcher", "--renew", "--expires-days", "0")


@pytest.mark.django_db
def test_revoking_from_the_page_or_the_command(researcher):
    client = Client()
    client.force_login(researcher)
    key = api_token(researcher)
    revoked = client.post(PAGE, {"action": "revoke"})
    assert "revoked" in revoked.content.decode() and "You have no token" in revoked.content.decode()
    assert not _works(key) and not ApiToken.objects.exists()

    key = api_token(researcher)
    call_command("api_token", "researcher", "--revoke", stdout=StringIO())
    assert not _works(key) and not ApiToken.objects.exists()
    err = StringIO()
    call_command("api_token", "researcher", "--revoke", stderr=err)
    assert "had no API token" in err.getvalue()


@pytest.mark.django_db
@pytest.mark.parametrize("field", ["is_staff", "is_active"])
def test_losing_staff_status_or_being_deactivated_ends_the_token(researcher, django_user_model, field):
    key = api_token(researcher)
    # Changed without a signal (a bulk update): refused on every request all the same.
    django_user_model.objects.filter(pk=researcher.pk).update(**{field: False})
    assert not _works(key)
    django_user_model.objects.filter(pk=researcher.pk).update(**{field: True})
    assert _works(key)
    # Changed by a save (the admin, a command): the token is deleted and does not come back.
    setattr(researcher, field, False)
    researcher.save()
    assert not ApiToken.objects.filter(user=researcher).exists()
    setattr(researcher, field, True)
    researcher.save()
    assert not _works(key)


@pytest.mark.django_db
def test_logging_in_does_not_touch_the_token(researcher):
    key = api_token(researcher)
    login = Client().post("/accounts/login/", {"username": "researcher", "password": "pw-secret-123"})
    assert login.status_code == 302  # the login saved last_login
    assert _works(key)


@pytest.mark.django_db
def test_repeated_bad_tokens_get_429_and_good_requests_are_not_counted(researcher, settings):
    limit = settings.API_TOKEN_FAILURES_PER_MINUTE
    key = api_token(researcher)
    for _ in range(3 * limit):
        assert _get(key).status_code == 200  # successes never use up the allowance
    for n in range(limit):
        response = _get(f"{n:040x}")
        assert response.status_code == 403 and response.json() == {"detail": "Invalid token."}
    throttled = _get("0" * 40)
    assert throttled.status_code == 429 and throttled["Content-Type"] == "application/json"
    assert "throttled" in throttled.json()["detail"] and 0 < int(throttled["Retry-After"]) <= 60
    # The client is throttled whatever it sends as a token, so guessing on gains nothing ...
    assert _get(key).status_code == 429
    assert _get("x y z").status_code == 429
    # ... but a session, and other clients, are not.
    assert _get(key, REMOTE_ADDR="192.0.2.50").status_code == 200
    session = Client()
    session.force_login(researcher)
    assert session.get(API).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("junk", ["\x00" * 40, "é" * 40, "A" * 39, "g" * 40, "a" * 41])
def test_a_malformed_key_is_an_invalid_token_not_a_server_error(researcher, junk):
    api_token(researcher)
    response = _get(junk)
    assert response.status_code == 403 and response.json()["detail"].startswith("Invalid token")


@pytest.mark.django_db
def test_forged_forwarded_for_does_not_escape_the_token_throttle(researcher, settings):
    limit = settings.API_TOKEN_FAILURES_PER_MINUTE
    for n in range(limit + 5):
        last = _get("0" * 40, HTTP_X_FORWARDED_FOR=f"203.0.113.{n}")
    assert last.status_code == 429
    settings.BEHIND_TLS_PROXY = True  # behind the proxy, the address it appended is the client
    key = api_token(researcher)
    assert _get(key, HTTP_X_FORWARDED_FOR="198.51.100.7").status_code == 200
    for n in range(limit + 5):
        last = _get("0" * 40, HTTP_X_FORWARDED_FOR=f"203.0.113.{n}, 198.51.100.9")
    assert last.status_code == 429
    assert _get(key, HTTP_X_FORWARDED_FOR="198.51.100.7").status_code == 200


@pytest.mark.django_db
def test_the_admin_lists_tokens_without_any_part_of_the_key(researcher, django_user_model):
    key = api_token(researcher, expires_in=timedelta(days=30))
    token = ApiToken.objects.get(user=researcher)
    admin = django_user_model.objects.create_superuser("boss", password="pw-secret-123")
    client = Client()
    client.force_login(admin)
    pages = [
        client.get("/admin/core/apitoken/"),
        client.get(f"/admin/core/apitoken/{token.pk}/change/"),
        client.get("/admin/core/apitoken/?q=researcher"),
    ]
    for page in pages:
        assert page.status_code == 200
        content = page.content.decode()
        assert "researcher" in content
        assert key not in content and token.lookup not in content and token.digest not in content
    assert client.get("/admin/core/apitoken/add/").status_code == 403
    assert client.get("/admin/authtoken/").status_code == 404  # DRF's raw-key tokens are gone
    # Deleting one in the admin revokes it.
    client.post(f"/admin/core/apitoken/{token.pk}/delete/", {"post": "yes"})
    assert not _works(key)


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_existing_drf_tokens_are_hashed_and_keep_working(django_user_model):
    from django.db.migrations.executor import MigrationExecutor

    staff = django_user_model.objects.create_user("researcher", password="pw-secret-123", is_staff=True)
    annotator = django_user_model.objects.create_user("ann", password="pw-secret-123")
    executor = MigrationExecutor(connection)
    executor.migrate([("core", "0003_job_delivery")])
    created = "timestamp with time zone" if connection.vendor == "postgresql" else "datetime"
    with connection.cursor() as cursor:
        # DRF authtoken's table, as its migrations left it on a site that had it installed.
        cursor.execute(
            f'CREATE TABLE authtoken_token ("key" varchar(40) NOT NULL PRIMARY KEY, "created" {created} NOT NULL, '
            '"user_id" integer NOT NULL UNIQUE)'
        )
        cursor.execute(
            'INSERT INTO authtoken_token ("key", "created", "user_id") VALUES (%s, %s, %s), (%s, %s, %s)',
            ["a" * 40, "2025-01-02 03:04:05", staff.pk, "b" * 40, "2025-01-02 03:04:05", annotator.pk],
        )
        cursor.execute(
            "INSERT INTO django_migrations (app, name, applied) VALUES ('authtoken', '0001_initial', %s)",
            [timezone.now()],
        )

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    assert "authtoken_token" not in connection.introspection.table_names()
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM django_migrations WHERE app = 'authtoken'")
        assert cursor.fetchone()[0] == 0
    token = ApiToken.objects.get()
    assert token.user_id == staff.pk and token.created.year == 2025 and token.expires is None
    assert token.digest == hashlib.sha256(b"a" * 40).hexdigest()
    assert _works("a" * 40) and not _works("b" * 40)

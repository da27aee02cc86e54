"""The Prolific webhook secret is sealed at rest like the connection secrets (core.sealing, with the
connections key): a copy of the database no longer forges webhooks (issue 68). The migration seals
a secret stored in plaintext before it; the sealed secret still verifies Prolific's deliveries."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from platforms.prolific.signatures import signature_matches

PLAIN = "whsec-plaintext-before-the-migration-0123456789"
BEFORE = [("prolific", "0001_initial")]


def _raw_rows() -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM annotation_prolifichooksecret")
        return cursor.fetchall()


def _prolific_signature(secret: str, stamp: str, body: bytes) -> str:
    """As Prolific's reference signs a delivery: base64 HMAC-SHA256 over the timestamp and the body."""
    return base64.b64encode(hmac.new(secret.encode(), stamp.encode() + body, hashlib.sha256).digest()).decode()


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_the_migration_seals_a_plaintext_secret_that_still_verifies_webhooks():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    old.get_model("prolific", "ProlificHookSecret").objects.create(workspace_id="ws-old", secret_id="s1", value=PLAIN)
    assert any(PLAIN in map(str, row) for row in _raw_rows())

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    rows = _raw_rows()
    assert len(rows) == 1 and not any(PLAIN in str(cell) for cell in rows[0])
    from platforms.prolific.models import ProlificHookSecret

    stored = ProlificHookSecret.objects.get(workspace_id="ws-old")
    assert stored.value == PLAIN
    body, stamp = b'{"event_type": "study.status.change"}', "1700000000"
    assert signature_matches(stored.value, stamp, body, _prolific_signature(PLAIN, stamp, body))
    assert not signature_matches(stored.value, stamp, body, _prolific_signature("another", stamp, body))


@pytest.mark.django_db
def test_a_new_secret_is_stored_sealed():
    from platforms.prolific.models import ProlificHookSecret

    ProlificHookSecret.objects.create(workspace_id="ws-new", value=PLAIN)
    assert not any(PLAIN in str(cell) for row in _raw_rows() for cell in row)
    assert ProlificHookSecret.objects.get().value == PLAIN


@pytest.mark.django_db
def test_a_key_rotation_reseals_the_webhook_secret_too(settings):
    """``connections --rotate`` re-seals every sealed secret with the new key, the webhook secret
    included: the old key can then be dropped and deliveries still verify."""
    from core.sealing import new_key
    from core.services.connections import reseal_connections
    from platforms.prolific.models import ProlificHookSecret

    old, new = new_key(), new_key()
    settings.CONNECTIONS_KEY = old
    ProlificHookSecret.objects.create(workspace_id="ws-rotated", value=PLAIN)
    settings.CONNECTIONS_KEY = f"{new},{old}"
    assert reseal_connections() == 1
    settings.CONNECTIONS_KEY = new
    assert ProlificHookSecret.objects.get().value == PLAIN

"""The workspace's webhook secret and subscriptions: there exactly while a published Prolific batch needs them.

:func:`reconcile_webhooks` (after publishing, after a re-read and at every poll) makes sure of the secret
and one subscription per event type, or deletes them; a failure never fails the caller (polling stays).

**Confirmed means: this site confirmed it** with the ``X-Hook-Secret`` its creation answered (no list
shows it), so any other match is deleted and a new one made. Creating a secret or a subscription is not
repeatable: one reconciliation per workspace at a time (a lease); an existing secret is adopted (a new
one would replace it); subscriptions are listed first and ``create_attempted`` committed before a create,
so a retry, a second process or a restart never leaves two, nor one counted as confirmed.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.utils import timezone

from annotation.crowd.providers import CrowdProvider, get_provider
from annotation.crowd.services.hooks import published
from annotation.models import Batch, Provider
from core.errors import ServiceError
from core.services.leases import LeaseHeld, exclusive
from platforms.prolific.client import Prolific, ProlificError, create_or_find
from platforms.prolific.models import ProlificHookSecret, ProlificSubscription
from platforms.prolific.signatures import EVENT_TYPES
from platforms.prolific.webhooks import STUDY_PROVIDERS
from platforms.prolific.webhooks.selectors import endpoint_url, webhook_status

logger = logging.getLogger(__name__)
#: A reconciliation is a few calls; a lease left by a killed process expires after this.
LEASE = dt.timedelta(minutes=10)


@dataclass
class WebhookState:
    """What a reconciliation found or did."""

    needed: bool = False
    subscribed: list[str] = field(default_factory=list)
    created: int = 0
    deleted: int = 0
    error: str = ""


def webhooks_needed() -> bool:
    """Whether a published Prolific batch is waiting for its participants' events."""
    return (
        Batch.objects.filter(provider__in=STUDY_PROVIDERS, status=Batch.Status.PUBLISHED)
        .exclude(hit_type_id="")
        .exists()
    )


def reconcile_webhooks(client: Prolific | None = None) -> WebhookState | None:
    """Subscriptions there iff a published Prolific batch needs them; ``None`` when webhooks are off or
    another process is reconciling. Prolific's errors are logged and reported in ``error``, never raised."""
    from platforms.prolific.connection.selectors import prolific_settings

    connection = prolific_settings()
    workspace = connection.workspace_id
    try:
        token = connection.token
    except ServiceError as exc:  # a stored token the key cannot open: logged, never raised
        logger.warning("Prolific webhooks not reconciled: %s", exc)
        return None
    if not (settings.PROLIFIC_WEBHOOKS and workspace and token):
        return None
    state = WebhookState(needed=webhooks_needed())
    if connection.api_url.startswith("https://api.prolific.com") and not endpoint_url().startswith("https://"):
        state.error = f"SITE_URL is {settings.SITE_URL!r}: Prolific delivers only to a public https address"
        logger.warning("Prolific webhooks not set up: %s", state.error)
        return state
    try:
        with exclusive(f"prolific.webhooks:{workspace}", "Prolific webhooks of the workspace", LEASE):
            client = client or get_provider(Provider.PROLIFIC).client
            state.needed = webhooks_needed()  # decided under the lease: a batch published meanwhile counts
            if state.needed:
                _subscribe(client, workspace, state)
            else:
                _unsubscribe(client, workspace, state)
    except LeaseHeld:
        return None
    except ServiceError as exc:  # ProlificError among them: the next reconciliation tries again
        state.error = str(exc)
        logger.warning("Prolific webhooks of workspace %s not reconciled: %s", workspace, exc)
    return state


@published.register(provider=Provider.PROLIFIC)
def follow_published(batch: Batch, provider: CrowdProvider) -> None:
    """After a Prolific batch is published: its workspace's webhooks (docs/prolific.md); a failure leaves polling."""
    reconcile_webhooks(getattr(provider, "client", None))


@published.register(provider="taskbuilder")  # a name: Task Builder may be removed
def follow_published_task_builder(batch: Batch, provider: CrowdProvider) -> None:
    """The same after a Task Builder batch is published: its study is a Prolific study of the workspace."""
    reconcile_webhooks(getattr(provider, "client", None))


def ensure_secret(client: Prolific, workspace: str, *, refresh: bool = False) -> str:
    """The workspace's secret: the stored one, else Prolific's existing one, else a new one. ``refresh``
    (signatures refused: it may have been replaced elsewhere): Prolific's list read again and adopted."""
    stored = ProlificHookSecret.objects.filter(workspace_id=workspace).first()
    if stored is not None and not refresh:
        return stored.value
    existing = client.hook_secrets(workspace)
    if stored is not None:
        if existing and existing[0]["value"] != stored.value:
            logger.warning("The webhook secret of Prolific workspace %s was replaced elsewhere: adopted", workspace)
            stored.secret_id, stored.value = str(existing[0].get("id") or ""), existing[0]["value"]
            stored.save(update_fields=["secret_id", "sealed"])
        return stored.value
    secret = existing[0] if existing else None
    if secret is None:
        secret = create_or_find(
            lambda: client.create_hook_secret(workspace), lambda: next(iter(client.hook_secrets(workspace)), None)
        )
    row = ProlificHookSecret.objects.filter(workspace_id=workspace).first() or ProlificHookSecret(
        workspace_id=workspace
    )
    row.secret_id, row.value = str(secret.get("id") or ""), secret["value"]  # sealed (the model's value)
    row.save()
    return secret["value"]


def _matches(subscriptions: list[dict], event_type: str, target: str) -> list[dict]:
    return [s for s in subscriptions if s.get("event_type") == event_type and s.get("target_url") == target]


def _subscribe(client: Prolific, workspace: str, state: WebhookState) -> None:
    ensure_secret(client, workspace, refresh=webhook_status().refused == "bad_signature")
    target = endpoint_url()
    remote = client.all_hook_subscriptions(workspace)
    for event_type in EVENT_TYPES:
        row, _ = ProlificSubscription.objects.get_or_create(
            workspace_id=workspace, event_type=event_type, defaults={"target_url": target}
        )
        if row.target_url != target:  # SITE_URL changed: the old address's subscription goes
            _delete_remote(client, [s for s in remote if s["id"] == row.remote_id], state)
            _record(row, target_url=target, remote_id="", hook_secret="", confirmed_at=None)
        found = _matches(remote, event_type, target)
        mine = next((s for s in found if row.remote_id and s["id"] == row.remote_id), None)
        if mine is not None and row.confirmed and mine["is_enabled"]:
            _delete_remote(client, [s for s in found if s is not mine], state)  # never two
            state.subscribed.append(event_type)
            continue
        if row.remote_id and row.hook_secret and _confirm(client, row):  # created, its confirmation not made
            _delete_remote(client, [s for s in found if s["id"] != row.remote_id], state)
            state.subscribed.append(event_type)
            continue
        # Unconfirmed leftovers whose secret is unknown, ones Prolific disabled, others' ones: gone.
        _delete_remote(client, found, state)
        # The intent, committed before the call that is not safe to repeat.
        _record(row, create_attempted=timezone.now(), remote_id="", hook_secret="", confirmed_at=None)
        created, hook_secret = client.create_hook_subscription(workspace, event_type, target)
        _record(row, remote_id=created["id"], hook_secret=hook_secret)
        state.created += 1
        if not _confirm(client, row):
            raise ProlificError(f"Prolific refused to confirm the new {event_type} subscription {created['id']}")
        state.subscribed.append(event_type)


def _record(row: ProlificSubscription, **fields) -> None:
    """Save these fields of the row at once (each step of the protocol is committed before the next call)."""
    ProlificSubscription.objects.filter(pk=row.pk).update(**fields)
    for name, value in fields.items():
        setattr(row, name, value)


def _confirm(client: Prolific, row: ProlificSubscription) -> bool:
    """Confirm the row's subscription with its ``X-Hook-Secret`` (then only ``confirmed_at`` is set);
    ``False`` when Prolific refused it (it is then made again); Prolific's failures raise."""
    try:
        client.confirm_hook_subscription(row.remote_id, row.hook_secret)
    except ProlificError as exc:
        if exc.upstream:
            raise
        logger.warning("Prolific refused to confirm webhook subscription %s: %s", row.remote_id, exc)
        return False
    _record(row, hook_secret="", confirmed_at=timezone.now())
    return True


def _delete_remote(client: Prolific, subscriptions: list[dict], state: WebhookState) -> None:
    for subscription in subscriptions:
        state.deleted += client.delete_hook_subscription(subscription["id"])


def _unsubscribe(client: Prolific, workspace: str, state: WebhookState) -> None:
    """Delete this site's subscriptions of the workspace (enabled or not), then their rows."""
    rows = ProlificSubscription.objects.filter(workspace_id=workspace)
    if not rows.exists():
        return
    targets = set(rows.values_list("target_url", flat=True)) | {endpoint_url()}
    remote = client.all_hook_subscriptions(workspace)
    ids = set(rows.exclude(remote_id="").values_list("remote_id", flat=True))
    ours = [
        s for s in remote if s["id"] in ids or (s.get("event_type") in EVENT_TYPES and s.get("target_url") in targets)
    ]
    _delete_remote(client, ours, state)
    rows.delete()

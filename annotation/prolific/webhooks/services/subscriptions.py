"""The workspace's webhook secret and subscriptions: there exactly while a published Prolific batch needs them.

:func:`reconcile_webhooks` is the one entry point: with a published Prolific batch it makes
sure the workspace has its secret and one confirmed subscription per event type
(:data:`~annotation.prolific.signatures.EVENT_TYPES`) delivering to :func:`endpoint_url`;
without one it deletes them (the secret is kept: Prolific has one per workspace). It runs
after a batch is published (``publish_batch``), after a re-read that finished a batch, and at
every ``manage.py poll_prolific`` (so a batch completed or cancelled elsewhere, a subscription
Prolific disabled after failed deliveries, or a change of ``SITE_URL`` is put right within
a minute). A failure to reach Prolific never fails the caller: polling stays the fallback.

Idempotence protocol (Prolific takes no request token; creating a secret or a subscription
is not safe to repeat):

- one reconciliation per workspace at a time (a ``core.services.leases`` lease);
- the secret: the stored one (``ProlificHookSecret``) is used; without it, Prolific's list of
  the workspace's secrets is read first and an existing secret adopted (creating one would
  replace it); only then is one created, and after a lost answer the list is read again;
- a subscription: the workspace's enabled subscriptions are listed first and one matching
  (event type and target URL) adopted, any other match deleted; one created but never
  confirmed is confirmed with its stored ``X-Hook-Secret``; disabled leftovers (a lost
  answer's, or one Prolific disabled) are deleted; only then is ``create_attempted`` committed
  and ``POST /hooks/subscriptions/`` sent, its id and ``X-Hook-Secret`` saved at once, and it
  is confirmed. A retry, a second process or a worker restart therefore never leaves two.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from annotation.crowd.clients.prolific_api import Prolific, ProlificError, ProlificUnknownOutcome
from annotation.crowd.providers import get_provider
from annotation.models import Batch, ProlificEvent, ProlificHookSecret, ProlificSubscription, Provider
from annotation.prolific.signatures import EVENT_TYPES
from core.errors import ServiceError
from core.services.leases import LeaseHeld, exclusive

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


def endpoint_url() -> str:
    """Where Prolific delivers: this site's public address (``SITE_URL``) and the endpoint's path."""
    return settings.SITE_URL.rstrip("/") + reverse("annotation:prolific-webhook")


def webhooks_needed() -> bool:
    """Whether a published Prolific batch is waiting for its participants' events."""
    return (
        Batch.objects.filter(provider=Provider.PROLIFIC, status=Batch.Status.PUBLISHED).exclude(hit_type_id="").exists()
    )


def webhooks_active(now: dt.datetime | None = None) -> bool:
    """Whether webhooks are seen to work, so polling may slow down (``PROLIFIC_POLL_WITH_WEBHOOKS_SECONDS``).

    Confirmed subscriptions to every event type say only that Prolific *should* deliver: a wrong
    ``SITE_URL`` or proxy, or the secret replaced elsewhere (every delivery then refused 403),
    breaks delivery without changing them. So webhooks count as active only while a verified
    event arrived within ``PROLIFIC_POLL_WITH_WEBHOOKS_SECONDS`` (or the subscriptions were
    confirmed less than that long ago, before any event could come): otherwise polling keeps
    its short interval.
    """
    workspace = settings.PROLIFIC_WORKSPACE_ID
    if not (settings.PROLIFIC_WEBHOOKS and workspace):
        return False
    confirmed = list(
        ProlificSubscription.objects.filter(
            workspace_id=workspace, confirmed=True, target_url=endpoint_url()
        ).values_list("event_type", "updated")
    )
    if not {event for event, _ in confirmed} >= set(EVENT_TYPES):
        return False
    since = (now or timezone.now()) - dt.timedelta(seconds=settings.PROLIFIC_POLL_WITH_WEBHOOKS_SECONDS)
    if max(updated for _, updated in confirmed) >= since:
        return True
    return ProlificEvent.objects.filter(received__gte=since).exists()


def reconcile_webhooks(client: Prolific | None = None) -> WebhookState | None:
    """Subscriptions there iff a published Prolific batch needs them; ``None`` when webhooks are off or
    another process is reconciling. Prolific's errors are logged and reported in ``error``, never raised."""
    workspace = settings.PROLIFIC_WORKSPACE_ID
    if not (settings.PROLIFIC_WEBHOOKS and workspace and settings.PROLIFIC_API_TOKEN):
        return None
    state = WebhookState(needed=webhooks_needed())
    if settings.PROLIFIC_API_URL.startswith("https://api.prolific.com") and not endpoint_url().startswith("https://"):
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


def ensure_secret(client: Prolific, workspace: str) -> str:
    """The workspace's secret: the stored one, else Prolific's existing one, else a new one (see the protocol)."""
    stored = ProlificHookSecret.objects.filter(workspace_id=workspace).first()
    if stored is not None:
        return stored.value
    existing = client.hook_secrets(workspace)
    if existing:
        secret = existing[0]
    else:
        try:
            secret = client.create_hook_secret(workspace)
        except ProlificUnknownOutcome:
            existing = client.hook_secrets(workspace)
            if not existing:
                raise
            secret = existing[0]
    ProlificHookSecret.objects.update_or_create(
        workspace_id=workspace, defaults={"secret_id": str(secret.get("id") or ""), "value": secret["value"]}
    )
    return secret["value"]


def _matches(subscriptions: list[dict], event_type: str, target: str) -> list[dict]:
    return [s for s in subscriptions if s.get("event_type") == event_type and s.get("target_url") == target]


def _subscribe(client: Prolific, workspace: str, state: WebhookState) -> None:
    ensure_secret(client, workspace)
    target = endpoint_url()
    enabled = client.hook_subscriptions(workspace)
    disabled: list[dict] | None = None
    for event_type in EVENT_TYPES:
        row, _ = ProlificSubscription.objects.get_or_create(
            workspace_id=workspace, event_type=event_type, defaults={"target_url": target}
        )
        if row.target_url != target:  # SITE_URL changed: the old address's subscription goes
            _delete_remote(client, [s for s in enabled if s["id"] == row.remote_id], state)
            ProlificSubscription.objects.filter(pk=row.pk).update(
                target_url=target, remote_id="", hook_secret="", confirmed=False
            )
            row.refresh_from_db()
        found = _matches(enabled, event_type, target)
        if found:
            keep = next((s for s in found if s["id"] == row.remote_id), found[0])
            _delete_remote(client, [s for s in found if s is not keep], state)  # never two
            ProlificSubscription.objects.filter(pk=row.pk).update(
                remote_id=keep["id"], hook_secret="", confirmed=True, updated=timezone.now()
            )
            state.subscribed.append(event_type)
            continue
        if row.remote_id and row.hook_secret:  # created, its confirmation not made (or lost)
            try:
                client.confirm_hook_subscription(row.remote_id, row.hook_secret)
            except ProlificError as exc:
                if exc.upstream:
                    raise
            else:
                ProlificSubscription.objects.filter(pk=row.pk).update(
                    hook_secret="", confirmed=True, updated=timezone.now()
                )
                state.subscribed.append(event_type)
                continue
        if disabled is None:
            disabled = client.hook_subscriptions(workspace, enabled=False)
        _delete_remote(client, _matches(disabled, event_type, target), state)  # unconfirmed or disabled leftovers
        # The intent, committed before the call that is not safe to repeat.
        ProlificSubscription.objects.filter(pk=row.pk).update(
            create_attempted=timezone.now(), remote_id="", hook_secret="", confirmed=False
        )
        created, hook_secret = client.create_hook_subscription(workspace, event_type, target)
        ProlificSubscription.objects.filter(pk=row.pk).update(remote_id=created["id"], hook_secret=hook_secret)
        state.created += 1
        client.confirm_hook_subscription(created["id"], hook_secret)
        ProlificSubscription.objects.filter(pk=row.pk).update(hook_secret="", confirmed=True, updated=timezone.now())
        state.subscribed.append(event_type)


def _delete_remote(client: Prolific, subscriptions: list[dict], state: WebhookState) -> None:
    for subscription in subscriptions:
        state.deleted += client.delete_hook_subscription(subscription["id"])


def _unsubscribe(client: Prolific, workspace: str, state: WebhookState) -> None:
    """Delete this site's subscriptions of the workspace (enabled or not), then their rows."""
    rows = ProlificSubscription.objects.filter(workspace_id=workspace)
    if not rows.exists():
        return
    targets = set(rows.values_list("target_url", flat=True)) | {endpoint_url()}
    remote = client.hook_subscriptions(workspace) + client.hook_subscriptions(workspace, enabled=False)
    ids = set(rows.exclude(remote_id="").values_list("remote_id", flat=True))
    ours = [
        s for s in remote if s["id"] in ids or (s.get("event_type") in EVENT_TYPES and s.get("target_url") in targets)
    ]
    _delete_remote(client, ours, state)
    rows.delete()

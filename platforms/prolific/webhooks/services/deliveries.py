"""Webhook deliveries received and acted on at once; polling as the fallback (docs/prolific.md, "Webhooks").

A verified delivery is trusted only to say *what to re-read*: the batch its resource names, re-read
from Prolific by the sync, so an event delivered twice, late or out of order never steps backwards.
Each event (its ``X-Event-ID`` unique) is inserted in the transaction that schedules the re-read; events
may share a signature (the event id is not signed), so that is never refused. The request makes no
remote call: 202 once stored, the re-read a background job (:data:`RESYNC_KIND`) later events join.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.crowd.services.background import sync_job
from annotation.crowd.services.sync import sync_batch
from annotation.models import Assignment, Batch
from core.errors import ServiceError
from core.jobs import background_job
from core.models import Job
from core.services.leases import LeaseHeld
from core.services.ratelimit import shared_cache
from platforms.prolific.client import moment
from platforms.prolific.connection.selectors import prolific_settings
from platforms.prolific.models import ProlificEvent, ProlificHookSecret, ProlificSession
from platforms.prolific.signatures import (
    HIGH_RETURN_RATE,
    STUDY_EVENTS,
    SUBMISSION_STATUS,
    Delivery,
    DeliveryRefused,
    read_delivery,
)
from platforms.prolific.webhooks import STUDY_PROVIDERS
from platforms.prolific.webhooks.selectors import (
    COUNTED_REFUSALS,
    WebhookStatus,
    refusal_key,
    webhook_status,
)
from platforms.prolific.webhooks.services.subscriptions import WebhookState, reconcile_webhooks

logger = logging.getLogger(__name__)

#: The background job that re-reads a batch after an event (or a poll).
RESYNC_KIND = "annotation.prolific.resync"
#: How long a re-read waits for a sync of the same batch that is under way.
LEASE_WAIT_SECONDS = 60


@dataclass
class Receipt:
    """``outcome``: ``scheduled``, ``joined`` (a re-read), ``recorded`` (a warning), ``duplicate`` or ``ignored``."""

    status: int
    outcome: str
    event_id: str
    batch: str | None = None
    job: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "event_id": self.event_id, "batch": self.batch, "job": self.job}


def _secret() -> str | None:
    workspace = prolific_settings().workspace_id
    if not settings.PROLIFIC_WEBHOOKS or not workspace:
        return None
    stored = ProlificHookSecret.objects.filter(workspace_id=workspace).first()
    return stored.value if stored else None


def batch_of(delivery: Delivery) -> Batch | None:
    """The batch the event's resource belongs to, as this site knows it (nothing else of the event is used)."""
    if delivery.event_type in STUDY_EVENTS:
        return Batch.objects.filter(provider__in=STUDY_PROVIDERS, hit_type_id=delivery.resource_id).first()
    if delivery.event_type == SUBMISSION_STATUS:
        held = (
            Assignment.objects.filter(
                provider_assignment_id=delivery.resource_id, hit__batch__provider__in=STUDY_PROVIDERS
            )
            .select_related("hit__batch")
            .first()
        )
        if held is not None:
            return held.hit.batch
        session = ProlificSession.objects.filter(session_id=delivery.resource_id).select_related("batch").first()
        return session.batch if session is not None else None
    return None


#: Bad signatures counted per hour; a warning at these counts (then every 100th).
BAD_SIGNATURE_WARNINGS = (3, 10)


def _note_refused(code: str, now: float) -> None:
    """Remember a refusal for its signature or timestamp (webhooks count as inactive until a verified event),
    and warn when bad signatures repeat: many mean the secret was replaced elsewhere or a proxy alters bodies."""
    workspace = prolific_settings().workspace_id
    cache = shared_cache()
    if code in COUNTED_REFUSALS and workspace:
        timeout = settings.PROLIFIC_POLL_WITH_WEBHOOKS_SECONDS + 60
        cache.set(refusal_key(workspace), {"at": now, "code": code}, timeout=timeout)
    if code != "bad_signature":
        return
    key = f"prolific.webhooks.bad_signatures:{int(now // 3600)}"
    try:
        count = 1 if cache.add(key, 1, timeout=3601) else cache.incr(key)
    except ValueError:  # expired in between
        cache.add(key, 1, timeout=3601)
        count = 1
    if count in BAD_SIGNATURE_WARNINGS or count % 100 == 0:
        logger.warning(
            "%d Prolific webhook deliveries refused for a bad signature this hour: was the workspace's secret "
            "replaced elsewhere, or does a proxy alter the body? Polling keeps its short interval meanwhile.",
            count,
        )


def receive(headers, body: bytes, *, now: float | None = None) -> Receipt:
    """Verify a delivery, record it once and act on it; :class:`DeliveryRefused` otherwise."""
    secret = _secret()
    if secret is None:
        raise DeliveryRefused(403, "not_set_up", "Prolific webhooks are not set up on this site (no secret)")
    now = time.time() if now is None else now
    try:
        delivery = read_delivery(headers, body, secret, now=now, max_age=settings.PROLIFIC_WEBHOOK_MAX_AGE_SECONDS)
    except DeliveryRefused as exc:
        _note_refused(exc.code, now)
        raise
    if ProlificEvent.objects.filter(event_id=delivery.event_id).exists():
        return Receipt(200, "duplicate", delivery.event_id)
    signed_at = dt.datetime.fromtimestamp(delivery.timestamp, tz=dt.UTC)
    try:
        batch, job, joined = _record(delivery, prolific_settings().workspace_id, signed_at, reason="Prolific event")
    except IntegrityError:  # the same event id delivered twice at once: the first one acts
        return Receipt(200, "duplicate", delivery.event_id)
    if job is not None:
        return Receipt(202, "joined" if joined else "scheduled", delivery.event_id, batch.name, job.pk)
    return Receipt(200, "ignored" if batch is None else "recorded", delivery.event_id, batch and batch.name)


def _record(
    delivery: Delivery, workspace: str, signed_at: dt.datetime, *, reason: str, recovered: bool = False
) -> tuple[Batch | None, Job | None, bool]:
    """Insert the event (an ``IntegrityError`` when it is there already) and, in the same transaction,
    schedule its batch's re-read: (the batch unless a draft, the re-read job if any, whether it joined one)."""
    batch = batch_of(delivery)
    if batch is not None and batch.status == Batch.Status.DRAFT:
        batch = None
    job, joined = None, False
    with transaction.atomic():
        event = ProlificEvent.objects.create(
            event_id=delivery.event_id,
            signature=delivery.signature_digest,
            recovered=recovered,
            event_type=delivery.event_type,
            resource_id=delivery.resource_id,
            workspace_id=workspace,
            metadata=delivery.metadata,
            signed_at=signed_at,
            batch=batch,
        )
        if batch is not None and delivery.event_type != HIGH_RETURN_RATE:
            job, joined = schedule_resync(batch, reason=reason)
            ProlificEvent.objects.filter(pk=event.pk).update(job_id=job.pk)
    return batch, job, joined


def schedule_resync(batch: Batch, *, reason: str = "Prolific event") -> tuple[Job, bool]:
    """The queued re-read of ``batch`` (joined: not started, it reads this change too), or a new one."""
    queued = (
        Job.objects.filter(kind=RESYNC_KIND, status=Job.Status.PENDING, arguments__0=batch.pk).order_by("-pk").first()
    )
    if queued is not None:
        return queued, True
    return resync_job.start(f"Re-read {batch.name} from Prolific ({reason})", batch.pk, of=batch), False


@background_job(RESYNC_KIND, task="annotation.tasks.prolific_resync_task", failures=(ServiceError,))
def resync_job(job: Job, batch_id: int) -> dict:
    """Re-read the batch from Prolific through the sync (waiting for a sync under way), then reconcile the webhooks."""
    batch = Batch.objects.get(pk=batch_id)
    ends = time.monotonic() + LEASE_WAIT_SECONDS
    while True:
        try:
            result = sync_batch(batch, job=job)
            break
        except LeaseHeld:
            if time.monotonic() >= ends:
                raise
            time.sleep(0.25)
    batch.refresh_from_db()
    if batch.status != Batch.Status.PUBLISHED:
        reconcile_webhooks()  # the last published batch done: its subscriptions go
    found = result.platform
    job.result = {
        "batch": batch.name,
        "approved": result.approved,
        "rejected": result.rejected,
        "freed": found.freed if found else 0,
        "completed": result.completed,
        "stopped": bool(found and found.stopped),
    }
    job.message = f"{job.result['freed']} place(s) freed, {result.approved} approved, {result.rejected} rejected" + (
        "; batch completed" if result.completed else ""
    )
    return job.result


#: The statuses of an event Prolific has not delivered (the reference's ``SubscriptionEventStatus``).
UNDELIVERED = ("FAILED", "PENDING")
#: A ``PENDING`` event is taken from the log only once this old (seconds): before, its delivery is most
#: likely on its way; after, Prolific is retrying it.
PENDING_GRACE_SECONDS = 120


@dataclass
class Recovery:
    """What reading the event logs found: events read, recorded now (missed deliveries), re-reads started."""

    read: int = 0
    recovered: int = 0
    batches: list[str] = field(default_factory=list)
    error: str = ""


def recover_missed_events(client=None) -> Recovery:
    """Record and act on, once, each confirmed subscription's undelivered events (an unreadable log: next poll)."""
    from platforms.prolific.client import ProlificError
    from platforms.prolific.models import ProlificSubscription
    from platforms.prolific.provider import api_client

    result = Recovery()
    workspace = prolific_settings().workspace_id
    if not settings.PROLIFIC_WEBHOOKS or not workspace:
        return result
    subscriptions = ProlificSubscription.objects.filter(workspace_id=workspace, confirmed_at__isnull=False)
    for subscription in subscriptions.exclude(remote_id=""):
        try:
            client = client or api_client()
            events = list(client.subscription_events(subscription.remote_id, UNDELIVERED))
        except ProlificError as exc:
            result.error = str(exc)
            logger.warning("the event log of subscription %s could not be read: %s", subscription.remote_id, exc)
            continue
        result.read += len(events)
        ripe = timezone.now() - dt.timedelta(seconds=PENDING_GRACE_SECONDS)
        for event in events:
            if event.get("status") == "PENDING" and (moment(event.get("datetime_created")) or ripe) > ripe:
                continue  # probably on its way
            recorded, batch = _recover(event, workspace)
            result.recovered += recorded
            if batch is not None and batch.name not in result.batches:
                result.batches.append(batch.name)
    return result


def _recover(event: dict, workspace: str) -> tuple[bool, Batch | None]:
    """Record one undelivered event (once) and schedule its batch's re-read: (recorded now, the batch or None)."""
    from platforms.prolific.signatures import _EVENT_ID, _RESOURCE_ID, EVENT_TYPES

    payload = event.get("payload") if isinstance(event.get("payload"), dict) else {}
    event_id = event.get("id")
    event_type = event.get("event_type") or payload.get("event_type")
    resource_id = event.get("resource_id") or payload.get("resource_id")
    if not (isinstance(event_id, str) and _EVENT_ID.fullmatch(event_id)):
        return False, None
    if not (event_type in EVENT_TYPES and isinstance(resource_id, str) and _RESOURCE_ID.fullmatch(resource_id)):
        return False, None
    if ProlificEvent.objects.filter(event_id=event_id).exists():
        return False, None
    delivery = Delivery(
        event_id=event_id,
        event_type=event_type,
        resource_id=resource_id,
        timestamp=0.0,
        signature_digest="",
        metadata=payload.get("metadata")
        if event_type == HIGH_RETURN_RATE and isinstance(payload.get("metadata"), dict)
        else {},
    )
    created = moment(event.get("datetime_created")) or timezone.now()
    try:
        batch, job, _ = _record(
            delivery, workspace, created, reason="an event Prolific did not deliver", recovered=True
        )
    except IntegrityError:  # delivered meanwhile
        return False, None
    logger.warning(
        "Prolific event %s (%s %s) was not delivered: recovered from its event log", event_id, event_type, resource_id
    )
    return True, batch if job is not None else None


@dataclass
class PollResult:
    """What one poll did: the webhooks' status (and so the interval used), the batches re-read."""

    status: WebhookStatus
    started: list[str] = field(default_factory=list)
    webhooks: WebhookState | None = None
    #: Draft batches whose interrupted publication was started again (their study live on Prolific).
    resumed: list[str] = field(default_factory=list)
    #: Events Prolific did not deliver, found in the subscriptions' event logs (:func:`recover_missed_events`).
    recovery: Recovery = field(default_factory=Recovery)

    @property
    def interval(self) -> int:
        return self.status.interval

    @property
    def webhooks_active(self) -> bool:
        return self.status.active


def poll_prolific(*, now: dt.datetime | None = None) -> PollResult:
    """Resume interrupted publications, reconcile the subscriptions, recover missed events, then re-read each
    published batch not re-read within :func:`~platforms.prolific.webhooks.selectors.webhook_status`'s interval."""
    from platforms.prolific.arrivals.services.links import resume_interrupted_publications

    result = PollResult(status=webhook_status(now))
    try:
        result.resumed = resume_interrupted_publications()
    except ServiceError as exc:  # not configured, Prolific down: the rest of the poll goes on
        logger.warning("interrupted publications not checked: %s", exc)
    state = reconcile_webhooks()
    result.recovery = recover_missed_events()
    status = webhook_status(now)
    since = (now or timezone.now()) - dt.timedelta(seconds=status.interval)
    result.status, result.webhooks = status, state
    batches = Batch.objects.filter(provider__in=STUDY_PROVIDERS, status=Batch.Status.PUBLISHED).exclude(hit_type_id="")
    for batch in batches.order_by("pk"):
        recent = (
            Job.objects.filter(kind__in=(RESYNC_KIND, sync_job.kind), arguments__0=batch.pk, created__gte=since)
            .exclude(status=Job.Status.FAILED)
            .exists()
        )
        if not recent:
            schedule_resync(batch, reason="poll")
            result.started.append(batch.name)
    return result

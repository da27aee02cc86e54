"""What the site knows of its Prolific webhooks: whether they are seen to work, and what Prolific warned of.

Confirmed subscriptions say only that Prolific *should* deliver (a wrong ``SITE_URL`` or proxy, or a
secret replaced elsewhere, breaks delivery without changing them). So webhooks count as **active**
(:func:`webhook_status`) only while ``PROLIFIC_WEBHOOKS`` is on with a workspace, this site confirmed a
subscription of every event type to :func:`endpoint_url`, a verified delivery arrived within
``PROLIFIC_POLL_WITH_WEBHOOKS_SECONDS``, and no delivery was refused for its signature or timestamp
since (:func:`refusal_key`). No grace period: until the first verified event, polling stays short.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Count, Max, Min
from django.urls import reverse
from django.utils import timezone

from annotation.models import Batch, Provider
from core.services.ratelimit import shared_cache
from platforms.prolific.connection.selectors import prolific_settings
from platforms.prolific.models import ProlificEvent, ProlificSubscription
from platforms.prolific.signatures import EVENT_TYPES, HIGH_RETURN_RATE

#: The refusals that say deliveries may be failing (a replaced secret, a proxy changing bodies, a clock off).
COUNTED_REFUSALS = ("bad_signature", "stale")


def endpoint_url() -> str:
    """Where Prolific delivers: this site's public address (``SITE_URL``) and the endpoint's path."""
    return settings.SITE_URL.rstrip("/") + reverse("annotation:prolific-webhook")


def refusal_key(workspace: str) -> str:
    """The ``shared`` cache's key of the workspace's last counted refusal (``{"at": seconds, "code": …}``)."""
    return f"prolific.webhooks.last_refused:{workspace}"


def span(seconds: float) -> str:
    """A duration as a person reads it: ``40 s``, ``5 min``, ``3 h``, ``2 d`` (rounded down)."""
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 120 * 60:
        return f"{seconds // 60} min"
    if seconds < 48 * 3600:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} d"


@dataclass(frozen=True)
class WebhookStatus:
    """Whether webhooks are seen to work, the polling interval that follows, and why, in one sentence."""

    active: bool
    #: Seconds: ``PROLIFIC_POLL_WITH_WEBHOOKS_SECONDS`` while active, else ``PROLIFIC_POLL_SECONDS``.
    interval: int
    #: What the batch page and ``poll_prolific`` print ("Webhooks active: last verified event 3 min ago …").
    sentence: str
    last_event: dt.datetime | None = None
    #: Event types without a subscription this site confirmed.
    unconfirmed: tuple[str, ...] = field(default_factory=tuple)
    #: Why a delivery was refused since the last verified event (``bad_signature``, ``stale``), or "".
    refused: str = ""
    #: Events Prolific did not deliver, recovered from its event log within ``PROLIFIC_POLL_WITH_WEBHOOKS_SECONDS``,
    #: and by how much the latest of them was late (seconds from the event to its recovery).
    behind: int = 0
    behind_by: float | None = None


def _behind(workspace: str, now: dt.datetime) -> tuple[int, float | None]:
    since = now - dt.timedelta(seconds=settings.PROLIFIC_POLL_WITH_WEBHOOKS_SECONDS)
    rows = list(
        ProlificEvent.objects.filter(workspace_id=workspace, recovered=True, received__gte=since)
        .order_by("-received")
        .values_list("signed_at", "received")
    )
    if not rows:
        return 0, None
    signed, received = rows[0]
    return len(rows), max(0.0, (received - signed).total_seconds())


def webhook_status(now: dt.datetime | None = None) -> WebhookStatus:
    """The status (the module's rule), and whether webhooks are behind: events recovered from the event
    log (never counted as delivered)."""
    now = now or timezone.now()
    status = _webhook_status(now)
    workspace = prolific_settings().workspace_id
    if not workspace or not settings.PROLIFIC_WEBHOOKS:
        return status
    count, late = _behind(workspace, now)
    if not count:
        return status
    window = span(settings.PROLIFIC_POLL_WITH_WEBHOOKS_SECONDS)
    sentence = (
        f"{status.sentence}. Webhooks are behind: {count} event{'s' if count != 1 else ''} Prolific did not deliver"
        f" in the last {window} {'were' if count != 1 else 'was'} recovered from its event log, the latest"
        f" {span(late)} after it happened"
    )
    return dataclasses.replace(status, sentence=sentence, behind=count, behind_by=late)


def _webhook_status(now: dt.datetime) -> WebhookStatus:
    short, long = settings.PROLIFIC_POLL_SECONDS, settings.PROLIFIC_POLL_WITH_WEBHOOKS_SECONDS
    workspace = prolific_settings().workspace_id

    def polling(why: str, **more) -> WebhookStatus:
        return WebhookStatus(False, short, f"Polling every {span(short)}: {why}", **more)

    if not settings.PROLIFIC_WEBHOOKS:
        return polling("webhooks are off (PROLIFIC_WEBHOOKS)")
    if not workspace:
        return polling("webhooks need PROLIFIC_WORKSPACE_ID")
    confirmed = set(
        ProlificSubscription.objects.filter(
            workspace_id=workspace, target_url=endpoint_url(), confirmed_at__isnull=False
        ).values_list("event_type", flat=True)
    )
    unconfirmed = tuple(event for event in EVENT_TYPES if event not in confirmed)
    last = (
        ProlificEvent.objects.filter(workspace_id=workspace, recovered=False)  # delivered, not read from the log
        .order_by("-received")
        .values_list("received", flat=True)
        .first()
    )
    remembered = shared_cache().get(refusal_key(workspace))
    refused = remembered if remembered and (last is None or remembered["at"] >= last.timestamp()) else None
    code = refused["code"] if refused else ""
    if unconfirmed:
        why = (
            "no webhook subscription confirmed"
            if len(unconfirmed) == len(EVENT_TYPES)
            else f"webhook subscription not confirmed: {', '.join(unconfirmed)}"
        )
        return polling(why, last_event=last, unconfirmed=unconfirmed, refused=code)
    if refused:
        reason = "bad signature" if code == "bad_signature" else "stale timestamp"
        since = f", after the last verified event ({span((now - last).total_seconds())} ago)" if last else ""
        return polling(
            f"a delivery was refused ({reason}) {span(now.timestamp() - refused['at'])} ago{since}",
            last_event=last,
            refused=code,
        )
    if last is None:
        return polling("no verified event yet")
    ago = (now - last).total_seconds()
    if ago > long:
        return polling(f"no verified event for {span(ago)}", last_event=last)
    return WebhookStatus(
        True,
        long,
        f"Webhooks active: last verified event {span(ago)} ago; polling every {span(long)} as the fallback",
        last_event=last,
    )


@dataclass(frozen=True)
class ReturnRateWarning:
    """Prolific's ``study.has_high_return_rate`` about a batch's study."""

    batch: Batch
    first: dt.datetime
    last: dt.datetime
    count: int
    #: The latest event's ``metadata`` (by signed time), as Prolific sent it.
    metadata: dict


def return_rate_warnings(
    batch_ids: Iterable[int] | None = None, *, published_only: bool = False
) -> list[ReturnRateWarning]:
    """The high-return-rate warnings of these batches (all when ``None``), latest first."""
    events = ProlificEvent.objects.filter(event_type=HIGH_RETURN_RATE, batch__isnull=False)
    if batch_ids is not None:
        events = events.filter(batch__in=list(batch_ids))
    if published_only:
        events = events.filter(batch__status=Batch.Status.PUBLISHED)
    rows = list(
        events.values("batch").annotate(first=Min("signed_at"), last=Max("signed_at"), count=Count("pk")).order_by()
    )
    if not rows:
        return []
    batches = Batch.objects.in_bulk([row["batch"] for row in rows])
    latest: dict[int, dict] = {}
    for batch_id, metadata in events.order_by("batch", "-signed_at", "-pk").values_list("batch", "metadata"):
        latest.setdefault(batch_id, metadata)
    warnings = [
        ReturnRateWarning(batches[row["batch"]], row["first"], row["last"], row["count"], latest[row["batch"]] or {})
        for row in rows
    ]
    return sorted(warnings, key=lambda w: w.last, reverse=True)


def batch_webhooks(batch: Batch) -> dict | None:
    """A Prolific batch page's panel: the webhooks' status while published, the return-rate warnings, the
    rehearsal (offered while a draft); ``None`` for other batches."""
    if batch.provider != Provider.PROLIFIC:
        return None
    from platforms.prolific.selectors import rehearsal_of

    published = batch.status == Batch.Status.PUBLISHED
    return {
        "status": webhook_status() if published else None,
        "warnings": return_rate_warnings([batch.pk]),
        "rehearsal": rehearsal_of(batch),
        "rehearsable": batch.status == Batch.Status.DRAFT,
    }

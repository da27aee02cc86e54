"""The HIT page and publishing HITs to a provider.

Publishing survives being interrupted anywhere: HIT rows with deterministic tokens are committed before
any call, each id saved as soon as the provider returns it, and a re-run retries the others with the
same token; past the provider's ``token_memory`` (the attempt's time saved first) a HIT is looked up
before it is made again. Call ``publish_batch`` outside a transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.template.loader import render_to_string
from django.utils import timezone

from annotation.crowd.providers import CrowdProvider, get_provider
from annotation.crowd.services.hooks import preparing, published
from annotation.crowd.services.locking import one_per_batch
from annotation.models import Batch, Hit, HitQuery
from core.errors import ServiceError
from core.models import Job
from core.progress import Progress
from genderbias.labels import VOCABULARY

#: The four categories as workers see them, each with its code, key, name, definition and examples.
CATEGORIES = VOCABULARY


def hit_page_context(
    hit: Hit,
    *,
    mode: str,
    action: str,
    answers: dict[str, str] | None = None,
    errors: dict[str, str] | None = None,
    hit_queries: Sequence[HitQuery] | None = None,
) -> dict[str, Any]:
    """What ``annotation/hit.html`` needs (``mode``: ``local`` or ``mturk``); ``hit_queries``: the HIT's
    queries in order when the caller read them already."""
    if hit_queries is None:
        hit_queries = hit.hit_queries.select_related("batch_query").order_by("position")
    answers = answers or {}
    errors = errors or {}
    queries = [
        {
            "field": hq.field_name,
            "position": hq.position,
            "text": hq.batch_query.text,
            "selected": answers.get(hq.field_name, ""),
            "error": errors.get(hq.field_name, ""),
        }
        for hq in hit_queries
    ]
    return {
        "mode": mode,
        "action": action,
        "hit": hit,
        "title": hit.batch.title,
        "queries": queries,
        "categories": CATEGORIES,
        "errors": errors,
        # Open unless the caller knows this is not the worker's first HIT of the batch (hit.html).
        "instructions_open": True,
    }


def render_hit_html(hit: Hit, *, mode: str, action: str) -> str:
    """The self-contained HIT page (inline CSS and JS, no external assets), e.g. for MTurk's HTMLQuestion."""
    return render_to_string("annotation/hit.html", hit_page_context(hit, mode=mode, action=action))


def _recover(provider: CrowdProvider, hit: Hit) -> str | None:
    """The id of a HIT an earlier attempt may have created after the provider forgot its token."""
    memory = provider.token_memory
    if hit.publish_attempted is None or memory is None or timezone.now() - hit.publish_attempted < memory:
        return None  # never tried, or the token still protects a retry
    return provider.find_hit(hit)


def check_publishable(batch: Batch) -> None:
    """Refuse a finished batch, and a machine-labelled one: its crowd work is in its derived batches."""
    if batch.status in (Batch.Status.CANCELLED, Batch.Status.COMPLETED):
        raise ServiceError(f"batch {batch.name!r} is {batch.status}; it cannot be published")
    if batch.derived.exists():
        names = ", ".join(batch.derived.values_list("name", flat=True))
        raise ServiceError(
            f"batch {batch.name!r} is labelled by a machine; its crowd work goes through {names} (publish those)"
        )


def prepare_batch(batch: Batch, provider: CrowdProvider) -> str:
    """The provider's container of the batch (a Prolific draft study, an MTurk HIT type), made once; its
    id. Also taken alone by a rehearsal."""
    if not batch.hit_type_id:
        preparing.run(batch, provider)
        # ``batch`` keeps the previous time: whether an earlier attempt may have succeeded unseen.
        Batch.objects.filter(pk=batch.pk).update(prepare_attempted=timezone.now())
        hit_type_id = provider.prepare(batch)
        if hit_type_id:
            Batch.objects.filter(pk=batch.pk).update(hit_type_id=hit_type_id)
            batch.hit_type_id = hit_type_id
    return batch.hit_type_id


@one_per_batch("Publishing")
def publish_batch(
    batch: Batch, provider: CrowdProvider | None = None, *, job: Job | None = None, bar: bool = False
) -> int:
    """Put every not-yet-published HIT of the batch on the provider; returns how many were published now."""
    check_publishable(batch)
    provider = provider or get_provider(batch.provider)
    prepare_batch(batch, provider)
    pending = list(batch.hits.filter(provider_id=None).select_related("batch").order_by("position"))
    action = provider.form_action()
    with Progress(f"Publishing {batch.name}", total=len(pending), unit="HIT", job=job, bar=bar) as progress:
        for hit in pending:
            if Batch.objects.filter(pk=batch.pk, status=Batch.Status.CANCELLED).exists():
                raise ServiceError(
                    f"batch {batch.name!r} was cancelled while publishing; {progress.done} HIT(s) went out"
                )
            provider_id = _recover(provider, hit)
            if provider_id is None:
                Hit.objects.filter(pk=hit.pk).update(publish_attempted=timezone.now())
                html = "" if provider.answers_on_site else render_hit_html(hit, mode=provider.name, action=action)
                provider_id = provider.publish_hit(hit, html)
            Hit.objects.filter(pk=hit.pk).update(provider_id=provider_id, status=Hit.Status.OPEN)
            progress.advance()
    provider.launch(batch)
    if batch.status == Batch.Status.DRAFT:
        batch.status = Batch.Status.PUBLISHED
        batch.published = timezone.now()
        batch.save(update_fields=["status", "published"])
    published.run(batch, provider)
    return len(pending)

"""The places of a calibration sample's held-out answers offered again (a sync step, before the quality loop).

The echo check holds a worker who follows the machine more than people do out of the sample's reference,
but their answers still fill their places: without this step a sampled query keeps one vote fewer than the
reference rule asked for. Registered in :data:`annotation.crowd.services.hooks.sync_steps` by
``annotation.apps.PLUG_INS``: a module nothing else imports, so the plug-ins' order is the steps' order.
"""

from __future__ import annotations

from typing import Any

from annotation.crowd.selectors import counts_answers
from annotation.crowd.services.hooks import sync_steps
from annotation.crowd.services.statuses import ANSWERED, settle_hit_statuses
from annotation.machine.selectors import read_sample
from annotation.models import Assignment, Batch, Reoffer
from annotation.quality.services.escalation import round_in_progress
from annotation.quality.services.reoffers import offer_again
from core.errors import ServiceError


def held_out_without_reoffer(batch: Batch) -> list[Assignment]:
    """The sample ``batch``'s counted answers of the workers its echo check holds out, not offered again yet."""
    if batch.purpose != Batch.Purpose.CALIBRATION or batch.parent_id is None:
        return []
    try:
        echo = read_sample(batch.parent).echo
    except ServiceError:  # no sample in force, no machine label: nothing is held out
        return []
    if echo is None or not echo.held_out:
        return []
    return list(
        Assignment.objects.filter(counts_answers(), hit__batch=batch, worker__pseudonym__in=echo.held_out)
        .filter(status__in=ANSWERED, reoffer__isnull=True)
        .exclude(hit__provider_id=None)
        .select_related("hit__batch")
        .order_by("hit__position", "submitted_at", "pk")
    )


@sync_steps.register
def reoffer_held_out(batch: Batch, provider: Any, result: Any) -> None:
    """Offer each held-out answer's place again once the round is in (:func:`offer_again`; an interrupted
    run's are finished first), counted in ``result.reoffered`` (and ``reoffer_over_budget``)."""
    live = (Batch.Status.PUBLISHED, Batch.Status.COMPLETED)
    if batch.purpose != Batch.Purpose.CALIBRATION or batch.status not in live:
        return
    for reoffer in batch.reoffers.filter(applied=False).exclude(assignment__status=Assignment.Status.REJECTED):
        provider.add_assignments(reoffer.hit, 1, reoffer.unique_token)
        Reoffer.objects.filter(pk=reoffer.pk).update(applied=True)
    if round_in_progress(batch):
        return
    done = offer_again(batch, provider, held_out_without_reoffer(batch), widen=True)
    result.reoffered += done.offered
    result.reoffer_over_budget += done.over_budget
    result.reoffer_refused = done.refused or result.reoffer_refused
    if done.offered:
        settle_hit_statuses(batch)
        if batch.status == Batch.Status.COMPLETED:
            Batch.objects.filter(pk=batch.pk).update(status=Batch.Status.PUBLISHED)
            batch.status = Batch.Status.PUBLISHED

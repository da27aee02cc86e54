"""The quality loop, a step of every sync: rejected places offered again, the thresholds applied, an
escalation round; each part idempotent."""

from __future__ import annotations

from annotation.crowd.providers import CrowdProvider
from annotation.crowd.services.hooks import sync_steps
from annotation.crowd.services.sync import SyncResult
from annotation.models import Batch
from annotation.quality.services.escalation import escalation_round, round_in_progress
from annotation.quality.services.reoffers import reoffer_rejected
from annotation.quality.services.thresholds import apply_thresholds


@sync_steps.register
def close_the_loop(batch: Batch, provider: CrowdProvider, result: SyncResult) -> None:
    """After the review: offer rejected places again, apply the thresholds, run an escalation round."""
    offered = reoffer_rejected(batch, provider)
    result.reoffered += offered.offered
    result.reoffer_over_budget += offered.over_budget
    result.reoffer_refused = offered.refused or result.reoffer_refused
    judged = apply_thresholds(batch, provider)
    result.flagged, result.blocked = judged.flagged, judged.blocked
    if batch.escalate_until and batch.status in (Batch.Status.PUBLISHED, Batch.Status.COMPLETED):
        if batch.purpose == Batch.Purpose.CALIBRATION and round_in_progress(batch):
            return  # the round's settled queries are read from all of its answers (round_in_progress)
        escalations = escalation_round(batch, batch.escalation_cap, provider, until=batch.escalate_until)
        result.escalated = sum(e.added for e in escalations)

"""Warn and block thresholds of a batch, applied to its workers at every sync.

Gold accuracy and agreement each have an optional warn and block threshold, applied once a worker has
``min_answers_judged`` answers. Below warn: a ``WorkerFlag``, lifted when the worker climbs back.
Below block: ``Worker.blocked``, never lifted automatically; committed before the provider's block
call (``provider_blocked`` after it), so a later sync finishes an interrupted block, never calls twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from annotation.crowd.providers import CrowdProvider
from annotation.crowd.services.batch_settings import THRESHOLD_FIELDS
from annotation.models import Batch, Worker, WorkerFlag
from annotation.quality.selectors import worker_quality


@dataclass
class ThresholdResult:
    flagged: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    lifted: list[str] = field(default_factory=list)


def _verdict(batch: Batch, row: dict[str, Any]) -> tuple[str | None, str]:
    """``("block" | "warn" | None, reason)`` for one worker-quality row."""
    reasons: dict[str, list[str]] = {"block": [], "warn": []}
    measures = (
        ("gold_accuracy", "gold accuracy", row["gold_total"]),
        ("agreement", "agreement with the others' majority", row["compared"]),
    )
    for key, label, evidence in measures:
        value = row[key]
        if value is None or evidence < batch.min_answers_judged:
            continue
        for level in ("block", "warn"):
            threshold = getattr(batch, f"{level}_{key}")
            if threshold is not None and value < threshold:
                reasons[level].append(f"{label} {value:.2f} < {threshold:.2f} over {evidence} answers")
                break
    for level in ("block", "warn"):
        if reasons[level]:
            return level, "; ".join(reasons[level])
    return None, ""


def apply_thresholds(batch: Batch, provider: CrowdProvider) -> ThresholdResult:
    """Flag and block the batch's workers below its thresholds; finish interrupted provider blocks."""
    result = ThresholdResult()
    if all(getattr(batch, name) is None for name in THRESHOLD_FIELDS):
        return result
    flags = {f.worker.pseudonym: f for f in batch.worker_flags.select_related("worker")}
    for row in worker_quality(batch):
        level, reason = _verdict(batch, row)
        flag = flags.get(row["worker"])
        if flag is not None and flag.level == WorkerFlag.Level.BLOCK:
            continue  # a block stands
        if level is None:
            if flag is not None:
                flag.delete()
                result.lifted.append(row["worker"])
            continue
        worker = Worker.objects.get(pseudonym=row["worker"])
        with transaction.atomic():
            WorkerFlag.objects.update_or_create(
                batch=batch, worker=worker, defaults={"level": level, "reason": reason[:300]}
            )
            if level == WorkerFlag.Level.BLOCK:
                Worker.objects.filter(pk=worker.pk).update(blocked=True)
        (result.blocked if level == WorkerFlag.Level.BLOCK else result.flagged).append(row["worker"])
    pending = batch.worker_flags.filter(level=WorkerFlag.Level.BLOCK, provider_blocked=False).select_related(
        "worker__identity"
    )
    for flag in pending:
        if provider.blocks_remotely and flag.worker.provider == batch.provider:
            provider.block_worker(flag.worker.identity.external_id, f"Blocked after batch {batch.name}: {flag.reason}")
        WorkerFlag.objects.filter(pk=flag.pk).update(provider_blocked=True)
    return result

"""A batch's state: the batch page, the batch list, the dashboard, the dataset card.

Here, below everything that shows it, because a machine-labelled batch's state counts its label
sources (:func:`~annotation.results.selectors.labels.source_counts`) and sums its derived crowd batches
(their progress and spend: :mod:`annotation.crowd.selectors`); it is the one reading of every batch's
state (crowd, machine-labelled, calibration, routed), so no two pages, cards or texts disagree on a figure."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from annotation.crowd.selectors import (
    batch_progress,
    is_machine_labelled,
    spent,
)
from annotation.models import Batch
from annotation.results.selectors.labels import MACHINE, source_counts


def batch_state(batch: Batch, progress: dict | None = None) -> dict[str, Any]:
    """What ``batch`` is and where it stands: the one reading behind the batch page, the batch list
    and the dashboard, so the three never disagree.

    Keys: ``kind`` (``crowd``; ``machine``: :func:`annotation.crowd.selectors.is_machine_labelled`; ``calibration`` or
    ``routed``: a derived batch), ``status`` (the status shown: "machine-labelled" for a
    machine-labelled batch), ``progress`` (:func:`annotation.crowd.selectors.batch_progress`), ``answered`` and
    ``expected`` assignments (answered: :data:`annotation.crowd.selectors.ANSWERED_WORK`, the same before
    and after a sync), ``gold_failures`` (assignments that failed their gold questions), ``fraction`` (of the bar), ``spent`` (USD), ``estimate`` (USD,
    None for a machine-labelled batch: what its own HITs would cost is never spent nor
    committed). A machine-labelled batch adds ``machine``: ``queries``, ``accepted``
    (labels the machine gave that stand), ``crowd`` (labelled by the crowd or a ruling),
    ``sample`` and ``routed`` (queries sent to the crowd in its calibration sample and
    routed batches), ``unlabelled``; ``parts`` (its crowd batches, each with its own
    state); ``answered``, ``expected`` and ``gold_failures`` (theirs, summed); ``spent`` (theirs,
    bonuses included), ``committed`` (what their published HITs may still cost) and ``planned`` (their drafts' estimates).
    """
    progress = progress if progress is not None else batch_progress(batch)
    kind = batch.purpose or "crowd"
    if kind == "crowd" and is_machine_labelled(batch):
        return _machine_state(batch, progress)
    return {
        "kind": kind,
        "status": batch.status,
        "progress": progress,
        "answered": progress["answered"],
        "expected": progress["assignments_expected"],
        "gold_failures": progress["failed_gold"],
        "fraction": progress["fraction"],
        "spent": spent(batch, progress["charged"]),
        "estimate": (batch.cost or {}).get("total"),
        "machine": None,
    }


def _machine_state(batch: Batch, progress: dict) -> dict[str, Any]:
    parts = []
    for part in batch.derived.order_by("created", "pk"):
        state = batch_state(part)
        estimate = Decimal(state["estimate"] or 0)
        live = part.status == Batch.Status.PUBLISHED
        state |= {
            "batch": part,
            "queries": state["progress"]["queries"],
            "committed": max(Decimal("0.00"), estimate - state["spent"]) if live else Decimal("0.00"),
            "planned": estimate if part.status == Batch.Status.DRAFT else Decimal("0.00"),
        }
        parts.append(state)
    counted = [p for p in parts if p["batch"].status != Batch.Status.CANCELLED]
    sources = source_counts(batch)
    queries = progress["queries"]
    labelled = sum(sources.values())
    machine = {
        "queries": queries,
        "accepted": sources.get(MACHINE, 0),
        "crowd": labelled - sources.get(MACHINE, 0),
        "sample": sum(p["queries"] for p in counted if p["kind"] == Batch.Purpose.CALIBRATION),
        "routed": sum(p["queries"] for p in counted if p["kind"] == Batch.Purpose.ROUTED),
        "unlabelled": queries - labelled,
    }
    return {
        "kind": "machine",
        "status": "machine-labelled",
        "progress": progress,
        "answered": sum(p["answered"] for p in parts),
        "expected": sum(p["expected"] for p in counted),
        "gold_failures": sum(p["gold_failures"] for p in parts),
        "fraction": labelled / queries if queries else None,
        "spent": sum((p["spent"] for p in parts), Decimal("0.00")),
        "committed": sum((p["committed"] for p in parts), Decimal("0.00")),
        "planned": sum((p["planned"] for p in parts), Decimal("0.00")),
        "estimate": None,
        "all_crowd_estimate": (batch.cost or {}).get("total"),
        "machine": machine,
        "parts": parts,
    }


def batch_overview(limit: int | None = None) -> list[dict]:
    """Batches, newest first, each with ``batch`` and its :func:`batch_state`."""
    return [
        {"batch": batch} | batch_state(batch)
        for batch in Batch.objects.select_related("query_set", "pool").order_by("-created", "-pk")[:limit]
    ]


def batch_of_query_set(query_set) -> Batch | None:
    """The batch whose export registered ``query_set`` (its newest such export), or None: a report on an
    exported set is described by that batch's facts (the paper bundle's methods paragraph)."""
    from annotation.models import Export

    export = Export.objects.filter(query_set=query_set).select_related("batch").order_by("-created", "-pk").first()
    return export.batch if export is not None else None

"""A batch's state: the one reading of every kind of batch behind every page, card and text that shows
it, so no two disagree on a figure. Here, because a machine-labelled batch's state counts its label
sources and sums its derived crowd batches."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from annotation.crowd.selectors import batch_progress, is_machine_labelled, spent
from annotation.models import Batch
from annotation.results.selectors.labels import MACHINE, source_counts


def batch_state(batch: Batch, progress: dict | None = None) -> dict[str, Any]:
    """What ``batch`` is and where it stands: ``kind`` (``crowd``, ``machine``, ``calibration``,
    ``routed``), ``status`` (as shown), ``progress``, ``answered`` and ``expected`` assignments,
    ``gold_failures``, ``fraction``, ``spent`` and ``estimate`` (USD). A machine-labelled batch sums its
    ``parts`` (crowd batches' states), adds ``machine``, ``committed`` and ``planned``, and has no
    ``estimate``: its own HITs are never spent."""
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
    """The batch whose newest export registered ``query_set``, or None: a report on it is described by
    that batch's facts."""
    from annotation.models import Export

    export = Export.objects.filter(query_set=query_set).select_related("batch").order_by("-created", "-pk").first()
    return export.batch if export is not None else None

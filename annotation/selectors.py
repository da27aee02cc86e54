"""Reads of annotation state that other apps rely on (no writes, no heavy imports)."""

from __future__ import annotations

from .models import Adjudication, Batch


def adjudicated_labels(batch: Batch) -> dict[str, str]:
    """``qid -> label`` of every query of ``batch`` a researcher has settled (see :class:`Adjudication`)."""
    return dict(
        Adjudication.objects.filter(batch_query__batch=batch)
        .order_by("batch_query__position")
        .values_list("batch_query__qid", "label")
    )

"""What reads a batch's audit sample: its drawn queries and their expert labels (never imports services)."""

from __future__ import annotations

from annotation.models import AuditItem, AuditSample, Batch


def audit_sample(batch: Batch) -> AuditSample | None:
    """The batch's audit sample, or None before one is drawn."""
    return AuditSample.objects.filter(batch=batch).first()


def audit_sample_qids(batch: Batch) -> list[str]:
    """The audited queries' ids in draw order (empty before a sample is drawn).

    Draw order matters: any prefix of it is itself a simple random sample of the batch's queries.
    """
    return list(
        AuditItem.objects.filter(sample__batch=batch).order_by("draw_index").values_list("batch_query__qid", flat=True)
    )


def audit_labels(batch: Batch) -> dict[str, str]:
    """qid -> expert label of the audited queries labelled so far, in draw order (unlabelled ones left out)."""
    rows = (
        AuditItem.objects.filter(sample__batch=batch)
        .exclude(label="")
        .order_by("draw_index")
        .values_list("batch_query__qid", "label")
    )
    return dict(rows)

"""What reads a batch's audit sample: its drawn queries and their expert labels (never imports services)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404

from annotation.models import AuditItem, AuditSample, Batch
from core.models import ROLE_RANK, Membership
from core.selectors import group_of, role_in


def audit_sample(batch: Batch) -> AuditSample | None:
    return AuditSample.objects.filter(batch=batch).first()


def audit_labels(batch: Batch) -> dict[str, str]:
    """qid -> expert label of the audited queries labelled so far, in draw order (unlabelled ones left out)."""
    rows = (
        AuditItem.objects.filter(sample__batch=batch)
        .exclude(label="")
        .order_by("draw_index")
        .values_list("batch_query__qid", "label")
    )
    return dict(rows)


def population_qids(batch: Batch) -> list[str]:
    """The queries an audit sample is drawn from: the batch's own (gold questions left out, their labels are known)."""
    return list(batch.queries.filter(is_gold=False).values_list("qid", flat=True))


def may_label(user, sample: AuditSample) -> bool:
    """Whether ``user`` may give expert labels in ``sample``: a researcher or owner of the batch's group,
    or an account the researcher named as trusted (``AuditSample.trusted``). Viewers never."""
    if user is None:  # the operator, on the command line
        return True
    if not user.is_authenticated or not user.is_active:
        return False
    if user.is_superuser:
        return True
    role = role_in(user, group_of(sample.batch))
    if ROLE_RANK.get(role, 0) >= ROLE_RANK[Membership.Role.RESEARCHER]:
        return True
    return role is not None and sample.trusted.filter(pk=user.pk).exists()


def readable_batch(user, name: str) -> Batch:
    """The batch named ``name`` (else a 404) if ``user`` may read its audit sample (else a 403)."""
    batch = get_object_or_404(Batch, name=name)
    if not may_read(user, batch):
        raise PermissionDenied("This audit sample is for the batch's research group and the labellers it trusts.")
    return batch


def may_read(user, batch: Batch) -> bool:
    """Whether ``user`` may read the sample's progress and labels: any member of the batch's group
    (viewers included), or a trusted labeller."""
    if user.is_superuser:
        return True
    if role_in(user, group_of(batch)) not in (None, Membership.Role.ANNOTATOR):
        return True
    sample = audit_sample(batch)
    return sample is not None and may_label(user, sample)


def audit_progress(batch: Batch) -> dict[str, Any]:
    """The sample's state: drawn or not, its size, seed, who drew it and when, how many are labelled and by whom."""
    sample = audit_sample(batch)
    if sample is None:
        return {"drawn": False, "population": len(population_qids(batch))}
    items = sample.items.all()
    labelled = items.exclude(label="")
    labellers = sorted({name for name in labelled.values_list("labeller_name", flat=True) if name})
    dates = labelled.order_by("labelled_at").values_list("labelled_at", flat=True)
    return {
        "drawn": True,
        "size": sample.size,
        "seed": sample.seed,
        "population": sample.population,
        "drawn_by": sample.drawn_by.get_username() if sample.drawn_by else "",
        "drawn_at": sample.drawn_at,
        "labelled": labelled.count(),
        "labellers": labellers,
        "first_labelled_at": dates.first(),
        "last_labelled_at": dates.last(),
        "trusted": sorted(sample.trusted.values_list("username", flat=True)),
    }


def audit_items(batch: Batch) -> list[dict[str, Any]]:
    """Every audited query in draw order: qid, text, expert label ("" until labelled), who and when."""
    rows = AuditItem.objects.filter(sample__batch=batch).order_by("draw_index")
    return [
        {
            "index": item.draw_index,
            "qid": item.batch_query.qid,
            "text": item.batch_query.text,
            "label": item.label,
            "labeller": item.labeller_name,
            "labelled_at": item.labelled_at,
            "changes": len(item.history),
        }
        for item in rows.select_related("batch_query")
    ]


def next_to_label(batch: Batch, after: int = -1) -> AuditItem | None:
    """The first unlabelled audited query after draw index ``after`` (wrapping round), or None when all are labelled."""
    rows = AuditItem.objects.filter(sample__batch=batch, label="").select_related("batch_query").order_by("draw_index")
    return rows.filter(draw_index__gt=after).first() or rows.first()


def audit_item(batch: Batch, index: int) -> AuditItem | None:
    return AuditItem.objects.filter(sample__batch=batch, draw_index=index).select_related("batch_query").first()


def audit_facts(batch: Batch) -> dict[str, Any] | None:
    """The audit sample as the study's facts state it (JSON-friendly; None without one)."""
    progress = audit_progress(batch)
    if not progress["drawn"]:
        return None

    def day(value) -> str | None:
        return value.date().isoformat() if value else None

    return {
        **{key: progress[key] for key in ("size", "seed", "population", "labelled", "labellers", "drawn_by")},
        "drawn_on": day(progress["drawn_at"]),
        "first_labelled_on": day(progress["first_labelled_at"]),
        "last_labelled_on": day(progress["last_labelled_at"]),
    }

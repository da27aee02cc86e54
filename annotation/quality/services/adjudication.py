"""Adjudicate: a researcher settles one query's label, with a reason, recorded with who and when; one
ruling per query (a new one replaces the old). Gold questions are not adjudicated: their answer is fixed."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from annotation.models import Adjudication, Batch, BatchQuery
from core.errors import ServiceError
from genderbias.labels import CATEGORY_SLUGS, LABELS


def adjudicate(batch: Batch, qid: str, label: str, reason: str, user) -> Adjudication:
    """Record ``user``'s ruling that query ``qid`` of ``batch`` is ``label`` (a code n/f/m/o or a slug)."""
    code = CATEGORY_SLUGS.get(str(label).lower(), str(label).lower())
    if code not in LABELS:
        raise ServiceError(f"label: unknown label {label!r}; choose one of {', '.join([*LABELS, *CATEGORY_SLUGS])}")
    reason = (reason or "").strip()
    if not reason:
        raise ServiceError("reason: say why this label was chosen")
    if not getattr(user, "is_staff", False):
        raise ServiceError("only researchers (staff) adjudicate")
    with transaction.atomic():
        # The batch's row lock, as corrections: a ruling comes after one in flight; later ones see it.
        list(Batch.objects.select_for_update(of=("self",)).filter(pk=batch.pk).values_list("pk"))
        batch_query = BatchQuery.objects.filter(batch=batch, qid=qid, is_gold=False).first()
        if batch_query is None:
            raise ServiceError(f"qid: no query {qid!r} in batch {batch.name!r}")
        adjudication, _ = Adjudication.objects.update_or_create(
            batch_query=batch_query,
            defaults={"label": code, "reason": reason, "decided_by": user, "decided_at": timezone.now()},
        )
    return adjudication

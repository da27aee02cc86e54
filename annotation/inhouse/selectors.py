"""Reads of the in-house team: its members, the team page's rows and each annotator's progress on a batch.

Read-only: nothing here changes state (the writes are in :mod:`.services`).
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db.models import Count, Q

from annotation.models import Assignment, Batch, Worker
from annotation.quality.selectors import worker_quality
from core.errors import ServiceError
from core.selectors import scope_users

#: The group of annotator accounts (in-house and Prolific participants alike).
ANNOTATORS_GROUP = "annotators"
_DONE = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED, Assignment.Status.REJECTED)


def team_members():
    """Every annotator account (active or not), by username; staff accounts are never annotators here."""
    return scope_users(  # the annotators of the researcher's research groups
        get_user_model().objects.filter(groups__name=ANNOTATORS_GROUP, is_staff=False, is_superuser=False)
    ).order_by("username")


def team_overview():
    """The team page's rows: each annotator with the batches they are on and the HITs they answered."""
    members = (
        team_members()
        .prefetch_related("annotation_team_batches")
        .annotate(
            answered=Count(
                "annotation_identity__worker__assignments",
                filter=Q(annotation_identity__worker__assignments__status__in=_DONE),
            )
        )
    )
    return list(members)


def get_member(username: str):
    """The annotator named ``username``; a :class:`ServiceError` (400) when there is none."""
    member = team_members().filter(username=username).first()
    if member is None:
        raise ServiceError(f"no annotator named {username!r}")
    return member


def team_progress(batch: Batch) -> list[dict]:
    """Per annotator of a local batch: HITs answered and in hand, gold accuracy, agreement, flags.

    The rows are the batch's team, or, for a batch open to everyone, every annotator who
    has taken one of its HITs. Quality figures are :func:`annotation.quality.selectors.worker_quality`'s.
    """
    users = list(batch.team.order_by("username")) or list(
        team_members().filter(annotation_identity__worker__assignments__hit__batch=batch).distinct()
    )
    workers = {
        w.identity.user_id: w for w in Worker.objects.filter(identity__user__in=users).select_related("identity")
    }
    counts: dict[tuple[int, str], int] = {
        (row["worker"], row["status"]): row["n"]
        for row in Assignment.objects.filter(hit__batch=batch, worker__in=workers.values())
        .values("worker", "status")
        .annotate(n=Count("pk"))
    }
    quality = {row["worker"]: row for row in worker_quality(batch)}
    hits = batch.hits.count()
    rows = []
    for user in users:
        worker = workers.get(user.pk)
        pk = worker.pk if worker else None
        answered = sum(counts.get((pk, status), 0) for status in _DONE)
        q = quality.get(worker.pseudonym, {}) if worker else {}
        rows.append(
            {
                "username": user.username,
                "active": user.is_active,
                "answered": answered,
                "in_progress": counts.get((pk, Assignment.Status.ASSIGNED), 0),
                "hits": hits,
                "fraction": answered / hits if hits else None,
                "gold_correct": q.get("gold_correct", 0),
                "gold_total": q.get("gold_total", 0),
                "gold_accuracy": q.get("gold_accuracy"),
                "agreement": q.get("agreement"),
                "compared": q.get("compared", 0),
                "rejected": q.get("rejected", 0),
                "blocked": bool(worker and worker.blocked),
                "flag": q.get("flag"),
            }
        )
    return rows

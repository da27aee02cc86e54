"""Reads of the in-house team: its members, the team page's rows and each annotator's progress on a batch."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db.models import Count, Q

from annotation.crowd.selectors import place_takers, team_size
from annotation.crowd.team_text import team_needs
from annotation.models import FREES_PLACE, Assignment, Batch, Hit, Provider, Worker
from annotation.quality.selectors import worker_quality
from core.errors import ServiceError
from core.selectors import scope_users

#: The group of annotator accounts (in-house and Prolific participants alike).
ANNOTATORS_GROUP = "annotators"
#: An annotator's submitted work, whatever its review (answered, on every page that counts it).
DONE = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED, Assignment.Status.REJECTED)


def team_members():
    """Every annotator account (active or not), by username; staff accounts are never annotators here."""
    return scope_users(  # the annotators of the researcher's research groups
        get_user_model().objects.filter(groups__name=ANNOTATORS_GROUP, is_staff=False, is_superuser=False)
    ).order_by("username")


def team_overview():
    """The team page's rows: each annotator with the batches they are on and the HITs they answered."""
    return list(
        team_members()
        .prefetch_related("annotation_team_batches")
        .annotate(
            answered=Count(
                "annotation_identity__worker__assignments",
                filter=Q(annotation_identity__worker__assignments__status__in=DONE),
            )
        )
    )


def get_member(username: str):
    """The annotator named ``username``; a :class:`ServiceError` (400) when there is none."""
    member = team_members().filter(username=username).first()
    if member is None:
        raise ServiceError(f"no annotator named {username!r}")
    return member


def team_progress(batch: Batch) -> list[dict]:
    """Per annotator of a local batch (its team, else everyone who took one of its HITs): HITs answered and
    in hand, gold accuracy, agreement, flags. A machine-labelled batch counts its crowd batches' work."""
    from annotation.crowd.selectors import crowd_batch_ids

    ids = crowd_batch_ids(batch)
    ids = ids[1:] or ids  # a machine-labelled batch's work is all in its crowd batches
    teams = get_user_model().objects.filter(annotation_team_batches__in=[batch.pk, *ids]).distinct()
    users = list(teams.order_by("username")) or list(
        team_members().filter(annotation_identity__worker__assignments__hit__batch__in=ids).distinct()
    )
    workers = {
        w.identity.user_id: w for w in Worker.objects.filter(identity__user__in=users).select_related("identity")
    }
    counts: dict[tuple[int, str], int] = {
        (row["worker"], row["status"]): row["n"]
        for row in Assignment.objects.filter(hit__batch__in=ids, worker__in=workers.values())
        .values("worker", "status")
        .annotate(n=Count("pk"))
    }
    quality = {row["worker"]: row for row in worker_quality(batch)}
    hits = Hit.objects.filter(batch__in=ids).count()
    rows = []
    for user in users:
        worker = workers.get(user.pk)
        pk = worker.pk if worker else None
        answered = sum(counts.get((pk, status), 0) for status in DONE)
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


@dataclass(frozen=True)
class Unfillable:
    """Places of a team batch's open HITs that no member of its team can take: ``places`` on ``hits`` HITs."""

    places: int
    hits: int
    #: Free places on the open HITs in all (those members can still take included).
    free: int
    #: The positions of the HITs with such places, how many of the places escalation added, the team's members
    #: who may take places, and the annotators to add (the most such places on one HIT).
    positions: tuple[int, ...] = ()
    escalated: int = 0
    team: int = 0
    needed: int = 0

    @property
    def who(self) -> str:
        """Who is needed, in the words routing's wait uses (:func:`annotation.crowd.team_text.team_needs`)."""
        return team_needs(self.places, self.positions, self.team, self.needed, self.escalated)


def unfillable_places(batch: Batch) -> Unfillable | None:
    """What a published in-house team batch can never finish without help, or ``None``: the free places
    beyond the active members who have not done (or may retake) the HIT, e.g. one added by escalation."""
    if batch.provider != Provider.LOCAL or batch.status != Batch.Status.PUBLISHED or not batch.team.exists():
        return None
    rows = (
        Hit.objects.filter(batch=batch, status=Hit.Status.OPEN)
        .annotate(held=Count("assignments", filter=~Q(assignments__status__in=FREES_PLACE)))
        .values_list("pk", "max_assignments", "held", "position")
    )
    hits = {pk: (most, held, position) for pk, most, held, position in rows}
    takers = place_takers(batch, list(hits)) or {}  # the one count of who is left to take a team's places
    places = free_in_all = escalated = needed = 0
    positions = []
    for pk, (most, held, position) in hits.items():
        free = max(0, most - held)
        stuck = max(0, free - takers[pk])
        free_in_all += free
        places += stuck
        if stuck:
            positions.append(position)
            escalated += min(stuck, max(0, most - batch.assignments_per_query))  # escalation's places: the last
            needed = max(needed, stuck)
    if not places:
        return None
    return Unfillable(
        places, len(positions), free_in_all, tuple(sorted(positions)), escalated, team_size(batch) or 0, needed
    )

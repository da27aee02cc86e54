"""Who may be handed a batch's HITs: a local batch with a team gives them to its members only.

Kept apart from :mod:`.team` (which manages the accounts and imports :mod:`.local`) so that
the hand-out in :mod:`.local` can use it without an import cycle.
"""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q

from ..models import Batch, Worker


def open_to(worker: Worker) -> Q:
    """A filter on batches: the batch has no team, or ``worker``'s account is on it."""
    members = Batch.team.through.objects.filter(batch=OuterRef("pk"))
    return ~Exists(members) | Exists(members.filter(user__annotation_identity__worker=worker))

"""Whether a batch is open to a worker: a local batch with a team is open to its members only.

The one rule, asked wherever work or training is handed out or answered (the hand-out, the HIT page
and its submit, the training page) and when a batch's team changes. Kept apart from :mod:`.team` so
the hand-out can use it without an import cycle.
"""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q

from annotation.models import Batch, Worker


def batch_open_to(batch_id: int | OuterRef, worker: Worker | int | OuterRef) -> Q:
    """The rule itself, as a condition on any table's rows, the batch and worker named by id (one assignment:
    two ``EXISTS``, no join) or by reference (many: ``OuterRef("hit__batch_id")``, ``OuterRef("worker_id")``)."""
    members = Batch.team.through.objects.filter(batch=batch_id)
    return ~Exists(members) | Exists(members.filter(user__annotation_identity__worker=worker))


def open_to(worker: Worker | int) -> Q:
    """A filter on batches: the batch has no team, or ``worker``'s account is on it."""
    return batch_open_to(OuterRef("pk"), worker)


def assignment_open() -> Q:
    """A filter on assignments: the assignment's batch is open to the assignment's worker."""
    return batch_open_to(OuterRef("hit__batch_id"), OuterRef("worker_id"))


def is_open_to(batch: Batch, worker: Worker | int) -> bool:
    """Whether ``batch`` is open to ``worker`` (one query)."""
    return Batch.objects.filter(pk=batch.pk).filter(open_to(worker)).exists()

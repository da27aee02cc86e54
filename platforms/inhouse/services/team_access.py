"""Whether a batch is open to a worker: a local batch with a team is open to its members only.

The one rule, asked wherever work or a batch's training queries are handed out: the
hand-out (:func:`.local.claim_hit`, and the HIT a worker holds: one whose batch closed to
them is given back), the HIT page and its submit, the batches the next-HIT page hands to
quality's training plan (:func:`.handout.next_hit_for`) and the training page; and when a batch's team changes
(:func:`.team.set_batch_team` gives back the HITs held by those it no longer is open to). A batch without a
team is open to everyone; Prolific and MTurk batches never have one.

Kept apart from :mod:`.team` (which manages the accounts and imports :mod:`.local`) so that
the hand-out in :mod:`.local` can use it without an import cycle.
"""

from __future__ import annotations

from django.db.models import Exists, OuterRef, Q

from annotation.models import Batch, Worker


def _open(batch, worker) -> Q:
    """The rule itself, for ``batch`` given as a column reference (``OuterRef``) or an id."""
    members = Batch.team.through.objects.filter(batch=batch)
    return ~Exists(members) | Exists(members.filter(user__annotation_identity__worker=worker))


def open_to(worker: Worker | int) -> Q:
    """A filter on batches: the batch has no team, or ``worker``'s account is on it."""
    return _open(OuterRef("pk"), worker)


def batch_open_to(batch_id: int | OuterRef, worker: Worker | int | OuterRef) -> Q:
    """The same rule as a condition on any table's rows, the batch and worker named by id or reference.

    For a statement about one assignment (the submit's conditional ``UPDATE``: the batch and
    worker are literals, so the condition is two ``EXISTS`` and the statement has no join) or
    about many (``OuterRef("hit__batch_id")``, ``OuterRef("worker_id")``).
    """
    return _open(batch_id, worker)


def assignment_open() -> Q:
    """A filter on assignments: the assignment's batch is open to the assignment's worker."""
    return batch_open_to(OuterRef("hit__batch_id"), OuterRef("worker_id"))


def is_open_to(batch: Batch, worker: Worker | int) -> bool:
    """Whether ``batch`` is open to ``worker`` (one query)."""
    return Batch.objects.filter(pk=batch.pk).filter(open_to(worker)).exists()

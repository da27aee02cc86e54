"""One publish, sync or escalation per batch at a time.

Each such action holds the batch's lease (:mod:`core.services.leases`) for its whole run: two syncs at
once would review every assignment twice. An annotator's correction is refused while work that reads
the answers holds a lease (:func:`use_under_way`); such work waits for one under way (:func:`answers_settled`).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import TypeVar

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core.services.leases import exclusive

F = TypeVar("F", bound=Callable)


def batch_key(batch) -> str:
    return batch_key_of(batch.pk)


def batch_key_of(batch_id: int) -> str:
    return f"annotation.batch:{batch_id}"


#: The actions holding a batch's lease that never read its answers: a correction goes on while they run.
#: Fixed here, not registered by the decorated modules, so every process reads leases alike.
NOT_READING_ANSWERS = frozenset({"Publishing", "Setting the bonus rule"})


def one_per_batch(action: str) -> Callable[[F], F]:
    """Decorate a service ``f(batch, ...)`` so it runs holding the batch's lease (``action`` names it)."""
    reads = action not in NOT_READING_ANSWERS

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(batch, *args, **kwargs):
            with exclusive(batch_key(batch), f"{action} of batch {batch.name!r}"):
                if reads:  # a correction in flight commits first; later ones see the lease
                    answers_settled([batch.pk])
                return function(batch, *args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


#: How long an export's reading lease lives if its process dies (it is released as soon as the export ends).
READ_TTL = timedelta(hours=1)


def _read_prefix(batch_id: int) -> str:
    return f"annotation.batch-read:{batch_id}:"


def answers_settled(batch_ids: Iterable[int]) -> None:
    """Wait for every correction of these batches' answers in flight to commit (it holds their row locks):
    work about to read answers takes a lease first, then passes this barrier, so what is read stays."""
    with transaction.atomic():
        lock_batches(batch_ids)


def lock_batches(batch_ids: Iterable[int]) -> None:
    """Take these batches' row locks, in one order (by id) so that two takers never wait on each
    other, until the caller's transaction ends: the lock corrections and the readers of answers share."""
    from annotation.models import Batch

    rows = Batch.objects.select_for_update(of=("self",)).filter(pk__in=list(batch_ids)).order_by("pk")
    list(rows.values_list("pk"))


def reads_answers(action: str) -> Callable[[F], F]:
    """Decorate ``f(batch, ...)`` that reads the batch's answers without holding the batch's lease (an
    export): it runs holding a lease of its own (several may run at once), after :func:`answers_settled`."""

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(batch, *args, **kwargs):
            key = _read_prefix(batch.pk) + uuid.uuid4().hex
            with exclusive(key, f"{action} of batch {batch.name!r}", ttl=READ_TTL):
                answers_settled([batch.pk])
                return function(batch, *args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


@contextmanager
def reading_answers(batch, action: str) -> Iterator[None]:
    """Read ``batch``'s answers to publish or decide something (``action``, e.g. "A dataset"): holding a
    reading lease, after the corrections in flight commit, and recorded as a use (``AnswerUse``) of the
    batch and its parent, so that a later correction is refused too (what was published stays true)."""
    ids = [batch.pk] + ([batch.parent_id] if getattr(batch, "parent_id", None) else [])
    key = _read_prefix(batch.pk) + uuid.uuid4().hex
    with exclusive(key, f"{action} of batch {batch.name!r}", ttl=READ_TTL):
        answers_settled(ids)
        yield
        # Recorded once the reading succeeded, while the lease still holds every correction off.
        from annotation.models import AnswerUse

        AnswerUse.objects.bulk_create([AnswerUse(batch_id=pk, action=action) for pk in ids])


def use_under_way(batch_ids: Iterable[int]) -> str | None:
    """What reads these batches' answers right now (a live lease's purpose: a sync, an escalation, a bonus
    payment, an export), or ``None``. Corrections read it under the batches' row lock."""
    from core.models import Lease

    ids = list(batch_ids)
    held = Q(key__in=[batch_key_of(pk) for pk in ids])
    for pk in ids:
        held |= Q(key__startswith=_read_prefix(pk))
    for lease in Lease.objects.filter(held, expires__gt=timezone.now()).order_by("acquired"):
        if not any(lease.purpose.startswith(f"{action} of batch ") for action in NOT_READING_ANSWERS):
            return lease.purpose
    return None

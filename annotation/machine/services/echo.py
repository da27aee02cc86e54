"""A researcher's review of the echo check: restore a flagged worker's sample answers, or hold them out again.

The check is a read (``annotation.machine.selectors.sample_echo``); a researcher's decision after
reviewing a flagged worker (a specialist, a careful worker on an easy sample) is an
:class:`~annotation.models.EchoRestore` row, written under the batch's row lock (two researchers at once
leave one row). A routing already made keeps what it recorded; the next plan, report and routing read it.
"""

from __future__ import annotations

from django.db import transaction

from annotation.machine.selectors import read_sample
from annotation.models import Batch, EchoRestore, Worker
from core.errors import FieldError, StateError


def restore_echo_worker(batch: Batch, worker: str, *, by=None, reason: str = "") -> EchoRestore:
    """Put the flagged ``worker``'s (pseudonym) sample answers back into ``batch``'s reference;
    ``FieldError`` when the sample has no such worker or the check does not flag them."""
    with transaction.atomic():
        Batch.objects.select_for_update().filter(pk=batch.pk).first()
        echo = read_sample(batch).echo
        flagged = {w.worker for w in echo.workers if w.flagged} if echo is not None else set()
        if worker not in flagged:
            known = echo is not None and any(w.worker == worker for w in echo.workers)
            why = "the echo check does not flag them" if known else "no such worker in the calibration sample"
            raise FieldError("worker", f"{worker!r} cannot be restored: {why}")
        restore, _ = EchoRestore.objects.get_or_create(
            batch=batch,
            worker=Worker.objects.get(pseudonym=worker),
            defaults={"restored_by": by, "reason": reason[:2000]},
        )
        return restore


def hold_out_again(batch: Batch, worker: str) -> None:
    """Undo :func:`restore_echo_worker`; ``StateError`` when they were not restored."""
    with transaction.atomic():
        Batch.objects.select_for_update().filter(pk=batch.pk).first()
        deleted, _ = EchoRestore.objects.filter(batch=batch, worker__pseudonym=worker).delete()
        if not deleted:
            raise StateError(f"{worker!r} was not restored on batch {batch.name!r}: nothing to hold out again")

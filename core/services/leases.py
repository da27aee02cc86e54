"""Leases: one process at a time does a given piece of work (publish, sync or escalate a batch).

A lease is a row keyed by what it protects, taken by one INSERT (atomic by the primary key); a
second caller is told who holds it (it does not wait: the work is being done). Releasing deletes
the row only if the caller still owns it (the ``owner`` token). A dead holder's row is taken over,
by compare-and-set on its owner token, once expired (``ttl``) or at once when its process on this
host no longer exists. Re-entrant within a thread.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from core.errors import StateError
from core.models import Lease
from core.services.storage import process_alive

DEFAULT_TTL = timedelta(hours=6)
_held = threading.local()


class LeaseHeld(StateError):
    """The work is already being done elsewhere."""


def _process_gone(lease: Lease) -> bool:
    # Another machine's process: only expiry tells.
    return lease.hostname == socket.gethostname() and not process_alive(lease.pid)


def acquire(key: str, purpose: str, ttl: timedelta = DEFAULT_TTL) -> str:
    """Take the lease on ``key``; returns the owner token. Raises :class:`LeaseHeld` when taken."""
    now = timezone.now()
    owner = uuid.uuid4().hex
    fields = {
        "owner": owner,
        "purpose": purpose,
        "hostname": socket.gethostname(),
        "pid": os.getpid(),
        "acquired": now,
        "expires": now + ttl,
    }
    try:
        with transaction.atomic():
            Lease.objects.create(key=key, **fields)
        return owner
    except IntegrityError:
        pass
    current = Lease.objects.filter(key=key).first()
    if current is None:  # released in between
        return acquire(key, purpose, ttl)
    if current.expires <= now or _process_gone(current):
        if Lease.objects.filter(key=key, owner=current.owner).update(**fields):
            return owner
        current = Lease.objects.filter(key=key).first() or current
    since = timezone.localtime(current.acquired).strftime("%Y-%m-%d %H:%M:%S %Z")
    raise LeaseHeld(
        f"{current.purpose} is already under way (since {since}, process {current.pid} on {current.hostname}); "
        "try again when it has finished"
    )


def release(key: str, owner: str) -> None:
    Lease.objects.filter(key=key, owner=owner).delete()


@contextmanager
def exclusive(key: str, purpose: str, ttl: timedelta = DEFAULT_TTL) -> Iterator[None]:
    """Run the block holding the lease on ``key`` (re-entrant within a thread)."""
    depth = _held.__dict__.setdefault("keys", {})
    owner = None if key in depth else acquire(key, purpose, ttl)
    depth[key] = depth.get(key, 0) + 1
    try:
        yield
    finally:
        depth[key] -= 1
        if owner is not None:
            del depth[key]
            release(key, owner)

"""Leases: one process at a time does a given piece of work (publish, sync or escalate a batch).

A lease is a row keyed by what it protects. Taking it is one INSERT, which the primary key
makes atomic on every database; a second caller finds the row and is told who holds it,
since when (it does not wait: the work it wanted is being done). Releasing deletes the row
only if the caller still owns it (the ``owner`` token), so a holder that lost its lease
never frees someone else's.

A holder that died leaves its row behind. The row is taken over, by a compare-and-set on
the old owner token, when it has expired (``ttl``, long enough for the longest sync) or,
sooner, when it was taken on this host by a process that no longer exists (a kill -9 of
a command). Re-entrant within a thread: work that holds a batch's lease may call other
work under the same key.
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

DEFAULT_TTL = timedelta(hours=6)
_held = threading.local()


class LeaseHeld(StateError):
    """The work is already being done elsewhere."""


def _process_gone(lease: Lease) -> bool:
    if lease.hostname != socket.gethostname():
        return False  # another machine's process: only expiry tells
    try:
        os.kill(lease.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


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
    depth = getattr(_held, "keys", None)
    if depth is None:
        depth = _held.keys = {}
    if key in depth:
        depth[key] += 1
        try:
            yield
        finally:
            depth[key] -= 1
        return
    owner = acquire(key, purpose, ttl)
    depth[key] = 1
    try:
        yield
    finally:
        del depth[key]
        release(key, owner)

"""Whose eyes the database is read with: the research-group scope of this request, command or job.

Context variables only (no model), read by :mod:`core.models`' scoped managers, set by the
middleware, ``ProjectCommand --group`` and the job runner; not thread locals, so a request's scope
ends with it and a background thread is never in it. ``current_request``: the request being
answered (its user read lazily, so an API token's user counts too); ``acting_group``: the group new
objects go to and, for a command with ``--group``, the one group it sees.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

current_request: ContextVar[Any] = ContextVar("current_request", default=None)
#: (group id, whether reads are limited to it) or None.
acting_group: ContextVar[tuple[int, bool] | None] = ContextVar("acting_group", default=None)


@contextmanager
def answering(request: Any) -> Iterator[None]:
    """The scope of ``request`` for everything read or made while answering it."""
    token = current_request.set(request)
    try:
        yield
    finally:
        current_request.reset(token)


@contextmanager
def acting_in(group_id: int | None, *, only: bool = False) -> Iterator[None]:
    """New objects go to ``group_id`` (``None``: the surrounding scope stays); with ``only``, nothing
    of another group is seen either, as inside a scope already limited to that group."""
    if group_id is None:
        yield
        return
    surrounding = acting_group.get()
    only = only or (surrounding is not None and surrounding == (group_id, True))
    token = acting_group.set((group_id, only))
    request_token = current_request.set(None) if only else None
    try:
        yield
    finally:
        acting_group.reset(token)
        if request_token is not None:
            current_request.reset(request_token)

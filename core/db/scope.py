"""Whose eyes the database is read with: the research-group scope of this request, command or job.

Holds context variables only (no model): :mod:`core.models`' group-scoped managers read them, the
middleware (:func:`core.web.middleware.group_scope`), ``ProjectCommand --group`` and the job runner
(:mod:`core.tasks`) set them. Context variables, not thread locals: a request's scope ends with
the request, and a background thread (which starts with an empty context) is never in it.

- ``request``: the request being answered; its user's memberships decide which groups are seen
  (:func:`core.models.scope_of`), read lazily so an API token's user (authenticated by DRF inside
  the view, then set on the request) counts as well as a session's.
- ``acting_group``: the group new objects go to, and for a command with ``--group`` the one group
  it sees; a job runs acting in the group of the request that started it.
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
    """New objects go to ``group_id``; with ``only``, nothing of another group is seen either.

    ``None`` leaves the surrounding scope as it is (a Job recorded before groups existed). Inside a
    scope limited to the same group (a command's ``--group`` running its jobs inline) the limit
    stays: the job sees what the command sees, not every group."""
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

"""One publish, sync or escalation per batch at a time.

Two ``sync_batch`` of one batch at once would both review every submitted assignment and
call the provider twice for each; two escalations would both extend. Each of these actions
holds the batch's lease (:mod:`core.services.leases`) for its whole run; a second caller, from a
command, a page, the API or a Celery task, is told that the batch is busy and by whom.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

from core.services.leases import exclusive

F = TypeVar("F", bound=Callable)


def batch_key(batch) -> str:
    return f"annotation.batch:{batch.pk}"


def one_per_batch(action: str) -> Callable[[F], F]:
    """Decorate a service ``f(batch, ...)`` so it runs holding the batch's lease."""

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(batch, *args, **kwargs):
            with exclusive(batch_key(batch), f"{action} of batch {batch.name!r}"):
                return function(batch, *args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate

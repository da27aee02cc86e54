"""The ``results`` cache: figures computed from the answers, kept under a key naming everything they
depend on, shared by every worker (:func:`remembered`)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from django.db import DatabaseError, transaction

from core.version import code_key

logger = logging.getLogger(__name__)
T = TypeVar("T")


def remembered(key: str, compute: Callable[[], T], *, generation: tuple[str, str] | None = None) -> T:
    """The value kept under ``key`` (naming everything it depends on; the code's version is added) in the
    bounded ``results`` cache, else ``compute()``, kept there; an unusable cache only costs the
    recomputation. ``generation``: ``(name, version)`` of what the value belongs to: storing it removes
    the name's entries of other versions."""
    from django.conf import settings

    from core.db import bounded_cache

    if not settings.RESULTS_CACHE_SECONDS:
        return compute()
    code = code_key()
    key = f"{code}:{key}"
    cached = True
    try:
        value = _contained(lambda: bounded_cache.read("results", key))
    except DatabaseError as exc:  # e.g. the table not migrated yet
        logger.warning("results cache unavailable (%s); computing without it", exc)
        cached, value = False, bounded_cache.MISSING
    if value is bounded_cache.MISSING:
        value = compute()
        if cached:
            name, version = generation or ("", "")
            try:
                _contained(
                    lambda: bounded_cache.store(
                        "results",
                        key,
                        value,
                        max_bytes=settings.RESULTS_CACHE_MAX_BYTES,
                        generation=name,
                        version=f"{code}:{version}" if name else "",
                    )
                )
            except DatabaseError as exc:
                logger.warning("results cache unavailable (%s); not stored", exc)
    return value


def _contained(call: Callable[[], T]) -> T:
    """``call()``, inside a savepoint when a transaction is open: on PostgreSQL a failed cache
    query (a missing table) would otherwise abort the caller's whole transaction."""
    if not transaction.get_connection().in_atomic_block:
        return call()
    with transaction.atomic():
        return call()

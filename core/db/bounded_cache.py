"""A cache whose size the code bounds, on any backend: the database table or Redis.

Django's database cache deletes rows only past ``MAX_ENTRIES``, expired or not, and Redis keeps
what it is given until its own ``maxmemory``: a cache of computed results, a new key at each new
answer, would grow for a study's life. So each entry is weighed (what the backend keeps of its
pickle, :func:`stored_bytes`) and recorded in a ledger (:class:`core.models.CacheEntry`); storing
one removes the same *generation*'s entries of another version (never read again) and, past
``max_bytes``, the oldest entries. The ledger and a database cache's rows change in one
transaction; reading never writes; an entry written otherwise reads as a miss.
"""

from __future__ import annotations

import pickle
from datetime import timedelta
from typing import Any

from django.core.cache import caches
from django.core.cache.backends.db import DatabaseCache
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from core.models import CacheEntry

MISSING: Any = object()


def read(alias: str, key: str) -> Any:
    """The value stored under ``key`` (:func:`store`), else :data:`MISSING`."""
    blob = caches[alias].get(key)
    if not isinstance(blob, bytes):
        return MISSING
    return pickle.loads(blob)


def store(
    alias: str,
    key: str,
    value: Any,
    *,
    max_bytes: int,
    generation: str = "",
    version: str = "",
) -> bool:
    """Keep ``value`` under ``key`` within the cache's bound; ``False`` if it alone is over it.
    ``generation``/``version``: what the entry belongs to (``batch-17``) and the version it is of."""
    blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    cache = caches[alias]
    weight = stored_bytes(cache, blob)
    if weight > max_bytes:
        return False
    with transaction.atomic():
        if generation:
            stale = CacheEntry.objects.filter(cache=alias, generation=generation).exclude(version=version)
            _delete(cache, stale)
        CacheEntry.objects.update_or_create(
            cache=alias,
            key=key,
            defaults={"bytes": weight, "generation": generation, "version": version, "stored": timezone.now()},
        )
        cache.set(key, blob)
        evict(alias, max_bytes)
    return True


def stored_bytes(cache, blob: bytes) -> int:
    """What the backend keeps for ``blob``: a database cache stores its pickle in base64 text
    (four bytes for three), Redis the pickle itself."""
    if isinstance(cache, DatabaseCache):
        pickled = len(pickle.dumps(blob, cache.pickle_protocol))
        return 4 * -(-pickled // 3)
    return len(blob)


def evict(alias: str, max_bytes: int) -> int:
    """Delete ``alias``'s expired entries, then its oldest until it holds at most ``max_bytes``;
    returns how many were deleted."""
    cache = caches[alias]
    entries = CacheEntry.objects.filter(cache=alias)
    deleted = 0
    timeout = cache.default_timeout
    if timeout:
        deleted += _delete(cache, entries.filter(stored__lt=timezone.now() - timedelta(seconds=timeout)))
    over = (entries.aggregate(total=Sum("bytes"))["total"] or 0) - max_bytes
    if over <= 0:
        return deleted
    oldest, freed = [], 0
    for pk, size in entries.order_by("stored", "id").values_list("id", "bytes").iterator():
        if freed >= over:
            break
        oldest.append(pk)
        freed += size
    return deleted + _delete(cache, CacheEntry.objects.filter(pk__in=oldest))


def size(alias: str) -> tuple[int, int]:
    """``(entries, bytes)`` the ledger holds for ``alias``."""
    totals = CacheEntry.objects.filter(cache=alias).aggregate(total=Sum("bytes"))
    return CacheEntry.objects.filter(cache=alias).count(), totals["total"] or 0


def _delete(cache, rows) -> int:
    keys = list(rows.values_list("key", flat=True))
    if keys:
        cache.delete_many(keys)
        rows.delete()
    return len(keys)

"""A fixed-window rate limit, a shared pace of outgoing calls, and the cache every process of the site shares.

Web requests that anyone can send (a Prolific study link) must not cost the site more than
it allows per client and per study, whichever gunicorn worker serves them, so their
counters live in the ``shared`` cache (``settings.CACHES``: Redis at ``SHARED_CACHE_URL``,
otherwise the database's ``shared_cache`` table), never in a process's own memory.

The window is fixed (the counter of "this minute" starts at zero at each full minute), which
allows up to twice the limit across a window's edge: enough to keep a flood from the site's
threads and from Prolific, and one cache key per client and window. On Redis the count is
exact (``INCR``); on the database cache two requests at the same instant may count once.

The pace (:func:`reserve_start`, :func:`shared_pace`) is for calls this site makes to an outside
API (Prolific's): time is cut into slots of ``1 / per_second`` seconds, each slot holds the
start of one call, and a call claims the first free slot with the cache's ``add`` (atomic on
Redis and on the database cache alike: of two claims at once one wins), then waits for it. So
however many gunicorn and Celery workers call at once, together they start at most
``per_second`` calls a second, spread evenly, never a burst; a call that finds no free slot
before its deadline is told at once, having waited for nothing.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from functools import partial

from django.core.cache import caches
from django.core.cache.backends.base import BaseCache

#: The alias of the cache every process shares (config/settings.py).
SHARED = "shared"


def shared_cache() -> BaseCache:
    return caches[SHARED]


def client_key(address: str) -> str:
    """What a per-client limit counts under: an IPv4 address as is, an IPv6 address's /64.

    One IPv6 subscriber (a home line, a cloud server) is routinely given a whole /64, and
    may send from any of its 2**64 addresses: counted per address, one /64 would be
    unlimited clients. An IPv4-mapped IPv6 address (``::ffff:a.b.c.d``) counts as its IPv4
    address. Anything that is not an address is counted as given.
    """
    import ipaddress

    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def over_limit(key: str, limit: int, *, window: int = 60, now: float | None = None) -> int:
    """Count one event under ``key``; 0 while at most ``limit`` were counted in this window, else
    the whole seconds until the window ends (for ``Retry-After``)."""
    now = time.time() if now is None else now
    slot = int(now // window)
    name = f"ratelimit:{key}:{slot}"
    cache = shared_cache()
    if cache.add(name, 1, timeout=window + 1):
        count = 1
    else:
        try:
            count = cache.incr(name)
        except ValueError:  # expired between the two calls: this event starts the count again
            cache.set(name, 1, timeout=window + 1)
            count = 1
    if count <= limit:
        return 0
    return max(1, math.ceil((slot + 1) * window - now))


#: How long the pace's "first slot that may be free" hint is kept (seconds).
_HINT_SECONDS = 300


def reserve_start(key: str, per_second: float, within: float, *, now: float | None = None) -> float | None:
    """Claim the next free start of the shared rate ``key`` (``per_second`` calls a second): the
    seconds to wait before starting the call, or ``None`` when no start is free within ``within``
    seconds (nothing is claimed then).

    The slots already claimed are skipped with a hint (the time the slot after the last one claimed
    begins), so a claim costs a read, an ``add`` and a write, plus one ``add`` per claim made at the
    same instant; a stale hint only costs a few more ``add`` calls, never a second call in a slot.
    The hint is a time, not a slot's number, and the slots are numbered per rate: processes that
    still run at a rate since changed (``PROLIFIC_API_CALLS_PER_SECOND`` lowered, say) read each
    other's hint as the moment it is, where a number counted at another rate sent the others far
    past their window, refusing every call until the hint expired.
    """
    now = time.time() if now is None else now
    width = 1.0 / per_second
    first = math.floor(now / width)
    last = math.floor((now + within) / width)
    cache = shared_cache()
    hint_key = f"pace:{key}:next"
    hinted = cache.get(hint_key)
    # The first slot that begins at or after the hint (less a nanosecond: (n + 1) · width / width may
    # come out a hair over n + 1).
    slot = max(first, math.ceil(hinted / width - 1e-9)) if isinstance(hinted, float) else first
    while slot <= last:
        # Kept a little past the slot's end: a slot is claimed once, even by a clock a second behind.
        if cache.add(f"pace:{key}:{per_second!r}:{slot}", 1, timeout=math.ceil((slot + 1) * width - now) + 2):
            cache.set(hint_key, (slot + 1) * width, timeout=_HINT_SECONDS)
            return max(0.0, slot * width - now)
        slot += 1
    return None


def shared_pace(key: str, per_second: float) -> Callable[[float], float | None]:
    """The pace of ``key`` as ``core.http.JsonClient`` asks for it: ``pace(within)`` is :func:`reserve_start`."""
    return partial(reserve_start, key, per_second)

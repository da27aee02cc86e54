"""A fixed-window rate limit, a shared pace of outgoing calls, and the cache every process of the site shares.

Requests anyone can send (a Prolific study link) are counted per client and per study in the
``shared`` cache (Redis at ``SHARED_CACHE_URL``, else a database table), whichever worker serves
them. The window is fixed: up to twice the limit across a window's edge, one cache key per client
and window; exact on Redis (``INCR``), on the database cache two requests at once may count once.

The pace (:func:`reserve_start`) spaces the calls this site makes to an outside API: time is cut
into slots of ``1 / per_second`` seconds, and a call claims the first free slot with the cache's
atomic ``add``, then waits for it. However many workers call, together they start at most
``per_second`` calls a second, never a burst; a call with no free slot before its deadline is told at once.
"""

from __future__ import annotations

import ipaddress
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
    """What a per-client limit counts under: an IPv4 address (mapped ones too) as is, an IPv6
    address's /64 (one subscriber is routinely given a whole /64), anything else as given."""
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
    seconds to wait before starting the call, or ``None`` when none is free within ``within`` seconds.

    Claimed slots are skipped by a hint, the time the slot after the last claimed begins (a stale
    hint costs a few more ``add`` calls, never two calls in a slot). A time, not a slot number:
    processes still at a rate since changed read it as the moment it is.
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

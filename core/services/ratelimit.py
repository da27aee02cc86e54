"""A fixed-window rate limit, and the cache every process of the site shares.

Web requests that anyone can send (a Prolific study link) must not cost the site more than
it allows per client and per study, whichever gunicorn worker serves them, so their
counters live in the ``shared`` cache (``settings.CACHES``: Redis at ``SHARED_CACHE_URL``,
otherwise the database's ``shared_cache`` table), never in a process's own memory.

The window is fixed (the counter of "this minute" starts at zero at each full minute), which
allows up to twice the limit across a window's edge: enough to keep a flood from the site's
threads and from Prolific, and one cache key per client and window. On Redis the count is
exact (``INCR``); on the database cache two requests at the same instant may count once.
"""

from __future__ import annotations

import math
import time

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

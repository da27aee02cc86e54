"""The client's address, one definition for login throttling (django-axes) and API throttling.

Without a proxy the client is the peer, ``REMOTE_ADDR``; ``X-Forwarded-For`` is ignored,
since anyone can send one. Behind the one trusted TLS proxy (``DJANGO_BEHIND_TLS_PROXY=1``)
every peer is that proxy, so the client is the address the proxy itself appended to
``X-Forwarded-For``: the last entry. Entries before it came from the client and may be
forged, so they are never read. A missing or malformed last entry falls back to the peer:
all such requests then share one address (a lock-out hits them together) rather than
letting a client choose its own.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def client_ip(request: HttpRequest) -> str:
    """The address throttles key on (``AXES_CLIENT_IP_CALLABLE`` takes this function)."""
    peer = request.META.get("REMOTE_ADDR", "")
    if not settings.BEHIND_TLS_PROXY:
        return peer
    appended = request.META.get("HTTP_X_FORWARDED_FOR", "").rsplit(",", 1)[-1].strip()
    try:
        return str(ipaddress.ip_address(appended))
    except ValueError:
        return peer

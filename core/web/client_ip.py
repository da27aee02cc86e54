"""The client's address, one definition for login throttling (django-axes) and API throttling.

Without a proxy the client is the peer, ``REMOTE_ADDR`` (anyone can send ``X-Forwarded-For``).
Behind the one trusted TLS proxy (``DJANGO_BEHIND_TLS_PROXY=1``) it is the last entry of
``X-Forwarded-For``, the one the proxy appended (earlier ones may be forged); a malformed one falls
back to the peer, so such requests share one address rather than choose their own.
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

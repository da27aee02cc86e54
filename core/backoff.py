"""How the clients of outside APIs wait before trying again (an exponential back-off, or the
``Retry-After`` the server asked for): one reading of that header, one formula. Pure (no Django).
"""

from __future__ import annotations

import email.utils
import time


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (a number or an HTTP date); ``None`` if absent or unreadable."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None  # unreadable: the back-off applies
    return max(0.0, when.timestamp() - time.time())


def backoff_delay(attempt: int, retry_after: float | None, *, base: float, cap: float) -> float:
    """Seconds to wait after failed attempt ``attempt`` (1-based): what the server asked, else ``base`` × 2^(attempt-1), at most ``cap``."""
    delay = retry_after if retry_after is not None else base * 2 ** (attempt - 1)
    return min(delay, cap)

"""Prolific's study-signing keys (``GET /.well-known/study/jwks.json``), cached as Prolific asks ("at least
daily") in this process and the shared cache: what a signed arrival is checked with.

Fetched again past ``PROLIFIC_JWKS_REFRESH_SECONDS`` (at most a day), or for an unknown ``kid`` (a
rotation) at most every :data:`UNKNOWN_KID_SECONDS`, so made-up ``kid`` values cost nothing. One bounded
fetch at a time across processes; a failed fetch keeps the last set, and only with none is an arrival
told to wait (:class:`KeysUnavailable`).
"""

from __future__ import annotations

import logging
import threading
import time
import urllib.parse

from django.conf import settings

from platforms.prolific.study_tokens import read_key_set

logger = logging.getLogger(__name__)

JWKS_PATH = "/.well-known/study/jwks.json"
#: A key set older than this is fetched again even when it holds the token's ``kid`` (seconds).
MAX_REFRESH_SECONDS = 24 * 3600
#: A ``kid`` the set does not hold makes the site fetch the set again at most this often (seconds).
UNKNOWN_KID_SECONDS = 30
_SHARED_KEY = "prolific-jwks:document"
_FETCHING_KEY = "prolific-jwks:fetching"

_lock = threading.Lock()
#: This process's copy: the key set by ``kid``, when it was fetched, and when a ``kid`` it did not hold last
#: made it fetch again (``time.time()``).
_memory: dict = {"keys": {}, "fetched": 0.0, "tried": 0.0}


class KeysUnavailable(Exception):
    """No key set could be had from Prolific yet (the arrival waits and tries again)."""


def jwks_url() -> str:
    """Where the keys are: ``PROLIFIC_JWKS_URL`` when set, else the JWKS path at the API's origin."""
    from platforms.prolific.connection.selectors import prolific_settings

    configured = getattr(settings, "PROLIFIC_JWKS_URL", "")
    if configured:
        return configured
    api = urllib.parse.urlsplit(prolific_settings().api_url)
    return f"{api.scheme}://{api.netloc}{JWKS_PATH}"


def refresh_seconds() -> float:
    return min(float(getattr(settings, "PROLIFIC_JWKS_REFRESH_SECONDS", 6 * 3600)), MAX_REFRESH_SECONDS)


def _fetch() -> dict:
    """The key set from Prolific, one bounded call (no token sent: the endpoint is public)."""
    from core.http import JsonClient

    url = jwks_url()
    parts = urllib.parse.urlsplit(url)
    timeout = float(getattr(settings, "PROLIFIC_JWKS_TIMEOUT_SECONDS", 3.0))
    client = JsonClient(
        f"{parts.scheme}://{parts.netloc}/", timeout=timeout, deadline=2 * timeout + 1, max_attempts=2, max_delay=1.0
    )
    return client.request("GET", url) or {}


def _adopt(document: dict, fetched: float) -> dict:
    keys = read_key_set(document)
    if keys:
        _memory.update(keys=keys, fetched=fetched)
    return keys


def _from_shared() -> None:
    """Take the shared cache's set when it is newer than this process's."""
    from core.services.ratelimit import shared_cache

    stored = shared_cache().get(_SHARED_KEY)
    if isinstance(stored, dict) and stored.get("fetched", 0) > _memory["fetched"]:
        _adopt(stored.get("document") or {}, stored["fetched"])


def _refresh(now: float, *, unknown: bool) -> None:
    """Fetch the set (this process's lock held), unless another process is fetching it right now;
    ``unknown``: for a ``kid`` the set does not hold (such fetches are spaced)."""
    from core.services.ratelimit import shared_cache

    cache = shared_cache()
    timeout = float(getattr(settings, "PROLIFIC_JWKS_TIMEOUT_SECONDS", 3.0))
    if not cache.add(_FETCHING_KEY, 1, int(2 * timeout + 2)):
        return  # another process fetches it; its set reaches this one through the shared cache
    if unknown:
        _memory["tried"] = now
    try:
        document = _fetch()
        if not _adopt(document, now):
            raise ValueError("the key set holds no RSA signing key")
        cache.set(_SHARED_KEY, {"document": document, "fetched": now}, int(2 * MAX_REFRESH_SECONDS))
    except Exception as exc:  # any failure keeps the last set; the arrival decides what to do
        logger.warning("Prolific's study keys could not be fetched from %s: %s", jwks_url(), exc)
    finally:
        cache.delete(_FETCHING_KEY)


def verification_keys(kid: str, *, now: float | None = None) -> dict[str, object]:
    """The key set to verify a token whose header names ``kid`` (see the module's docstring for when it is
    fetched again). :class:`KeysUnavailable` when there is none at all."""
    now = time.time() if now is None else now
    _from_shared()
    keys, fetched = _memory["keys"], _memory["fetched"]
    stale = now - fetched >= refresh_seconds()
    unknown = kid not in keys and now - _memory["tried"] >= UNKNOWN_KID_SECONDS
    if stale or unknown:
        timeout = float(getattr(settings, "PROLIFIC_JWKS_TIMEOUT_SECONDS", 3.0))
        if _lock.acquire(timeout=2 * timeout + 1):
            try:
                _from_shared()  # fetched meanwhile, here or by another process
                fresh = now - _memory["fetched"] < refresh_seconds()
                missing = kid not in _memory["keys"] and now - _memory["tried"] >= UNKNOWN_KID_SECONDS
                if not fresh or missing:
                    _refresh(now, unknown=fresh and missing)
            finally:
                _lock.release()
        _from_shared()
    if not _memory["keys"]:
        raise KeysUnavailable("Prolific's study keys are not available yet")
    return _memory["keys"]


def forget() -> None:
    """Drop this process's copy and the shared one (tests; a changed ``PROLIFIC_JWKS_URL``)."""
    from core.services.ratelimit import shared_cache

    _memory.update(keys={}, fetched=0.0, tried=0.0)
    shared_cache().delete_many([_SHARED_KEY, _FETCHING_KEY])

"""Secrets sealed at rest with Fernet (AES-128-CBC with HMAC-SHA256, from ``cryptography``). Pure.

The key comes from the environment (``CONNECTIONS_KEY``), never from the database or
``SECRET_KEY``: a copy of the database (a backup, a dump handed to a colleague) then holds
nothing usable, and rotating Django's ``SECRET_KEY`` after a leak (which ends sessions) does not
silently make every stored token unreadable. ``CONNECTIONS_KEY`` is one Fernet key, or several
separated by commas: the first seals, every one of them opens (rotation: put the new key first,
re-seal with ``manage.py connections --rotate``, then drop the old one). Docs: docs/deployment.md.
"""

from __future__ import annotations

import functools
import json

from core.errors import ServiceError

KEY_SETTING = "CONNECTIONS_KEY"


class SealError(ServiceError):
    """No key, a malformed key, or a sealed value that no key given opens; the message says which
    and what to do, and never holds a secret."""


def new_key() -> str:
    """A fresh Fernet key (32 random bytes, URL-safe base64), for ``CONNECTIONS_KEY``."""
    from cryptography.fernet import Fernet

    return Fernet.generate_key().decode()


def _keys(keys: str):
    from cryptography.fernet import Fernet, MultiFernet

    texts = [k.strip() for k in (keys or "").split(",") if k.strip()]
    if not texts:
        raise SealError(
            f"{KEY_SETTING} is not set: secrets cannot be stored on the site without it. Set it to a key made by "
            "`python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'` "
            "in the environment of every web and worker process, and restart them once."
        )
    fernets = []
    for position, text in enumerate(texts, 1):
        try:
            fernets.append(Fernet(text.encode()))
        except (ValueError, TypeError):
            raise SealError(
                f"{KEY_SETTING}: key {position} of {len(texts)} is not a Fernet key (32 bytes in URL-safe base64, "
                "44 characters)"
            ) from None
    return MultiFernet(fernets)


def check_keys(keys: str) -> None:
    """Raise :class:`SealError` unless ``keys`` holds at least one well-formed key."""
    _keys(keys)


def seal(values: dict[str, str], keys: str) -> str:
    """``values`` (secret fields by name) sealed with the first of ``keys``."""
    return _keys(keys).encrypt(json.dumps(values, sort_keys=True).encode()).decode()


def unseal(token: str, keys: str) -> dict[str, str]:
    """The values :func:`seal` sealed; :class:`SealError` when none of ``keys`` opens them.

    Every client opens its connection's secrets at each use (no restart after a change), so the
    opened values are kept per (sealed text, keys): a new secret or key is a new entry."""
    return dict(_unsealed(token, keys))


@functools.lru_cache(maxsize=32)
def _unsealed(token: str, keys: str) -> tuple[tuple[str, str], ...]:
    from cryptography.fernet import InvalidToken

    fernet = _keys(keys)
    try:
        values = json.loads(fernet.decrypt(token.encode()))
    except InvalidToken:
        raise SealError(
            f"the stored secrets cannot be opened with {KEY_SETTING}: it is not the key they were sealed with. "
            f"Put the old key after the new one ({KEY_SETTING}=NEW,OLD), or enter the secrets again"
        ) from None
    if not isinstance(values, dict):
        raise SealError("the stored secrets are not a sealed set of fields")
    return tuple((str(k), str(v)) for k, v in values.items())


def reseal(token: str, keys: str) -> str:
    """The same values sealed again with the first of ``keys`` (any of them opens the old token)."""
    from cryptography.fernet import InvalidToken

    try:
        return _keys(keys).rotate(token.encode()).decode()
    except InvalidToken:
        raise SealError(f"the stored secrets cannot be opened with any key of {KEY_SETTING}") from None

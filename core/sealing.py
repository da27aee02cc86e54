"""Secrets sealed at rest with Fernet (AES-128-CBC with HMAC-SHA256, from ``cryptography``). Pure.

The key comes from the environment (``CONNECTIONS_KEY``), never the database or ``SECRET_KEY``: a
copy of the database holds nothing usable, and rotating ``SECRET_KEY`` leaves stored tokens
readable. Without it, the first secret stored makes a key once in a private file
(:func:`key_in_file`), which every later process reads. ``CONNECTIONS_KEY`` may hold several keys,
comma-separated: the first seals, each opens (rotation: docs/deployment.md).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import tempfile
from pathlib import Path

from core.errors import ServiceError

KEY_SETTING = "CONNECTIONS_KEY"
#: The key file's name in the site's data folder, when ``CONNECTIONS_KEY`` is not set.
KEY_FILE = "connections.key"


class SealError(ServiceError):
    """No key, a malformed key, or a sealed value that no key given opens; the message says which
    and what to do, and never holds a secret."""


def new_key() -> str:
    """A fresh Fernet key (32 random bytes, URL-safe base64), for ``CONNECTIONS_KEY``."""
    from cryptography.fernet import Fernet

    return Fernet.generate_key().decode()


def key_in_file(path: Path, *, create: bool) -> str:
    """The key kept in ``path`` (``""``: none yet); with ``create``, a new one written there first if
    none, linked into place from a private file so two processes at once end with one key."""
    path = Path(path)
    if not path.exists():
        if not create:
            return ""
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor, draft = tempfile.mkstemp(dir=path.parent, prefix=".connections-key-")  # mode 0600
        try:
            with os.fdopen(descriptor, "w") as file:
                file.write(new_key() + "\n")
            with contextlib.suppress(FileExistsError):  # another process made it first: its key is the one
                os.link(draft, path)
        finally:
            os.unlink(draft)
    try:
        text = path.read_text().strip()
    except OSError as exc:
        raise SealError(f"the key file {path} cannot be read ({exc.strerror}); set {KEY_SETTING} instead") from None
    if not text:
        raise SealError(
            f"the key file {path} is empty; remove it (no secret can be opened without its key) or set {KEY_SETTING}"
        )
    return text


def _keys(keys: str):
    from cryptography.fernet import Fernet, MultiFernet

    texts = [k.strip() for k in (keys or "").split(",") if k.strip()]
    if not texts:
        # Without the variable the first secret saved makes the key file, so no key means it is gone.
        raise SealError(
            f"no key: {KEY_SETTING} is not set and the site's key file (VAR_DIR/{KEY_FILE}) is not there. "
            "Without the variable, the first secret saved on the Connections page makes that file once; secrets "
            "stored before it went need their key back: restore the file, or set "
            f"{KEY_SETTING} to that key (`manage.py connections --new-key` makes a new one) in the environment of "
            "every web and worker process and restart them, or enter the secrets again"
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


def seal(values: dict[str, str], keys: str) -> str:
    """``values`` (secret fields by name) sealed with the first of ``keys``."""
    return _keys(keys).encrypt(json.dumps(values, sort_keys=True).encode()).decode()


def unseal(token: str, keys: str) -> dict[str, str]:
    """The values :func:`seal` sealed; :class:`SealError` when none of ``keys`` opens them. Kept per
    (sealed text, keys), as every client opens its secrets at each use."""
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

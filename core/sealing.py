"""Secrets sealed at rest with Fernet (AES-128-CBC with HMAC-SHA256, from ``cryptography``). Pure.

The key comes from the environment (``CONNECTIONS_KEY``), never from the database or
``SECRET_KEY``: a copy of the database (a backup, a dump handed to a colleague) then holds
nothing usable, and rotating Django's ``SECRET_KEY`` after a leak (which ends sessions) does not
silently make every stored token unreadable. When none is given, the first secret stored makes
one, once, in a file only its owner may read (:func:`key_in_file`: ``VAR_DIR/connections.key``),
which every later process reads: a site started by ``bin/demo`` stores secrets without a new
variable or a restart. ``CONNECTIONS_KEY`` is one Fernet key, or several
separated by commas: the first seals, every one of them opens (rotation: put the new key first,
re-seal with ``manage.py connections --rotate``, then drop the old one). Docs: docs/deployment.md.
"""

from __future__ import annotations

import contextlib
import functools
import json
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
    """The key kept in ``path``; with ``create``, a new one written there first if there is none.

    Made once: the new key is written to a private file of its own (mode 0600) and linked into
    place, so two processes making one at the same time end with one key, both reading it; a file
    found is never replaced. Without ``create`` and without the file: ``""`` (no key yet)."""
    import os
    import tempfile

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
        # As README.md and docs/deployment.md say: without the variable the first secret saved makes the key
        # file once (core.services.connections), so no key at all means that file is gone.
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

"""The one way a free-form id (a query id) goes into a URL path: ``<key:qid>``.

Query ids are whatever a query file holds (``a/b``, ``q?x``, ``50%``, ``..``). Django's ``str``
converter stops at ``/``, and percent-encoding is not enough: servers decode ``%2F`` before
resolving, and browsers collapse ``.`` and ``..`` whatever their encoding. So a key is escaped
with ``~``: every character outside ``A-Z a-z 0-9 - _ .`` (and a leading ``.``) becomes ``~XX`` per
UTF-8 byte, which nothing on the way decodes; usual ids read as themselves, and decoding is exact.
"""

from __future__ import annotations

import contextlib
import re

#: Kept as they are (RFC 3986's unreserved characters but ``~``, the escape character).
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")
_ESCAPE = re.compile(r"~([0-9A-F]{2})")


def encode_key(key: str) -> str:
    """``key`` as one path segment: unsafe characters (and a leading dot) as ``~XX`` per UTF-8 byte."""
    out: list[str] = []
    for position, char in enumerate(key):
        if char in _SAFE and not (position == 0 and char == "."):
            out.append(char)
        else:
            out.extend(f"~{byte:02X}" for byte in char.encode("utf-8"))
    return "".join(out)


def decode_key(segment: str) -> str:
    """The key whose :func:`encode_key` is ``segment``; ``ValueError`` for any other text (only the
    canonical form: each key has one URL)."""
    key = ""
    if set(_ESCAPE.sub("", segment)) <= _SAFE:  # each escape a byte, the rest safe characters
        with contextlib.suppress(UnicodeDecodeError):
            key = _ESCAPE.sub(lambda match: chr(int(match.group(1), 16)), segment).encode("latin-1").decode("utf-8")
    if not key or encode_key(key) != segment:
        raise ValueError(f"not an encoded key: {segment!r}")
    return key


class KeyConverter:
    """``<key:name>``: a free-form id as one path segment (:func:`encode_key`); a segment that is not a
    valid encoding answers 404."""

    regex = r"[A-Za-z0-9_.~-]+"

    def to_python(self, value: str) -> str:
        return decode_key(value)

    def to_url(self, value: str) -> str:
        return encode_key(str(value))

"""A secret taken out of text that may echo it back, in whatever spelling. Pure module.

A server's error may repeat the credential it was sent: in another case, percent-encoded, base64,
hex, JSON-escaped, or in part. :func:`mask_secret` replaces each of those spellings,
case-insensitively, and any stretch of :data:`FRAGMENT` characters of the secret, by ``…``; an
encoding mixed with other data, or a hash, is left.
"""

from __future__ import annotations

import base64
import re
import urllib.parse

#: The shortest piece of the secret masked on its own (a secret shorter than this: masked whole only).
FRAGMENT = 8
MASK = "…"


def _base64_cores(data: bytes) -> list[str]:
    """The base64 text the secret's bytes always produce, at each of the three alignments a longer
    encoded value can put them in (standard and URL-safe alphabets, without the partial ends)."""
    cores = []
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + data).decode().rstrip("=")
        start = -(-shift * 4 // 3)  # skip the characters that mix in the bytes before
        end = len(encoded) - (1 if (shift + len(data)) % 3 else 0)  # and the last, mixed with what follows
        core = encoded[start:end]
        if core:
            cores += [core, core.replace("+", "-").replace("/", "_")]
    return cores


def spellings(secret: str) -> list[str]:
    """The spellings of ``secret`` that :func:`mask_secret` looks for, longest first."""
    data = secret.encode()
    found = {
        secret,
        urllib.parse.quote(secret, safe=""),
        urllib.parse.quote_plus(secret, safe=""),
        data.hex(),
        "".join(f"\\u{ord(c):04x}" for c in secret),
        secret.replace("/", "\\/"),
        *_base64_cores(data),
    }
    return sorted((s for s in found if len(s) >= min(4, len(secret))), key=len, reverse=True)


def mask_secret(text: str, secret: str) -> str:
    """``text`` with every spelling of ``secret`` (and every piece of it of :data:`FRAGMENT` characters
    or more) replaced by ``…``. A secret shorter than 4 characters is not looked for (it would mask
    ordinary words)."""
    if not secret or len(secret) < 4 or not text:
        return text
    for spelling in spellings(secret):
        text = re.sub(re.escape(spelling), MASK, text, flags=re.IGNORECASE)
    if len(secret) > FRAGMENT:
        lowered = secret.lower()
        pieces = {lowered[i : i + FRAGMENT] for i in range(len(lowered) - FRAGMENT + 1)}
        spans = []
        low_text = text.lower()
        for piece in pieces:
            start = low_text.find(piece)
            while start != -1:
                spans.append((start, start + FRAGMENT))
                start = low_text.find(piece, start + 1)
        if spans:
            spans.sort()
            merged = [list(spans[0])]
            for start, end in spans[1:]:
                if start <= merged[-1][1]:
                    merged[-1][1] = max(merged[-1][1], end)
                else:
                    merged.append([start, end])
            out, last = [], 0
            for start, end in merged:
                out += [text[last:start], MASK]
                last = end
            text = "".join(out) + text[last:]
    return text

"""A run's name as it is set on paper (pure): the paper bundle's tables and the figures break it the same way, so a
name reads the same in a table and beside its curve."""

from __future__ import annotations

import re


def header_lines(name: str, chars: int) -> list[str]:
    """A run's name in lines of at most ``chars`` characters: broken after a space, ``-``, ``_``, ``.`` or ``/``, and a
    longer word with a hyphen (``bm25monot5reranked``: ``bm25mono-`` ``t5rerank-`` ``ed``)."""
    lines, line = [], ""
    for piece in re.split(r"(?<=[-_./ ])", name):
        if len(line) + len(piece.rstrip()) > chars and line.strip():
            lines.append(line.rstrip())
            line = ""
        while len(piece.rstrip()) > chars:
            lines.append(piece[: chars - 1] + "-")
            piece = piece[chars - 1 :]
        line += piece
    if line.strip():
        lines.append(line.rstrip())
    return [line.lstrip() for line in lines] or [name]

"""The paper bundle's ``README.txt`` (:mod:`publishing.services.paper`): how to use the files in a
paper, and a note on each file the bundle holds, so that it names every file written and no other. Pure; the text
and the notes are data, in ``bundle_readme.toml`` beside this module."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from fnmatch import fnmatch
from pathlib import Path

_TEXTS = tomllib.loads(Path(__file__).with_suffix(".toml").read_text(encoding="utf-8"))
#: The README's text, a :meth:`str.format` template (``{files}``: :func:`readme_files`).
README: str = _TEXTS["readme"]
#: What README.txt says of each file a bundle may hold (a name, or a pattern with ``*``), in its order:
#: it lists those the bundle holds, and only those (:func:`readme_files`).
FILE_NOTES: tuple[tuple[str, str], ...] = tuple(_TEXTS["notes"].items())


def readme_files(names: Iterable[str], template: str, style: str) -> str:
    """README.txt's list of files: each of :data:`FILE_NOTES` the bundle holds, with the names it matches."""
    lines = []
    for pattern, note in FILE_NOTES:
        matched = sorted(name for name in names if fnmatch(name, pattern))
        if not matched:
            continue
        shown = pattern if "*" not in pattern else f"{pattern} ({', '.join(matched)})"
        body = note.format(template=template, style=style).split("\n")
        lines.append(f"  {shown}\n" + "\n".join(f"      {line.strip()}" for line in body))
    return "\n".join(lines)

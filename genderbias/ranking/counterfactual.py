"""Counterfactual collections, every gendered word swapped for its other-gender counterpart (the rules:
docs/metrics.md, "Definitions"), on which CRBO re-runs a ranker: the swap table and the streaming rewrite.
``her`` → **his** by default (possessive "her book" is more frequent in passages than "saw her"; no rule is
right without parsing, so the choice is recorded with the collection).
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from genderbias.files.atomic import atomic_path
from genderbias.files.textfiles import MAX_LINE_BYTES, expanded, line_too_long
from genderbias.text.wordlists import DATA

__all__ = ["HER_CHOICES", "PAIRS", "Swapper", "match_case", "swap_table", "write_counterfactual"]

#: (female, male) pairs swapped in both directions.
PAIRS: tuple[tuple[str, str], ...] = tuple(
    tuple(line.split(","))
    for line in (DATA / "counterfactual_pairs.txt").read_text().splitlines()
    if line[:1] not in ("#", "")
)

#: Pronouns whose counterpart depends on the sentence; ``her`` is set by :func:`swap_table`.
ONE_WAY: dict[str, str] = {"his": "her", "him": "her", "hers": "his"}
HER_CHOICES = ("his", "him")


def swap_table(names: Iterable[tuple[str, str]] = (), her: str = "his") -> dict[str, str]:
    """Lower-case word → lower-case replacement, for pairs, pronouns and ``(word, 'f'|'m')`` ``names`` (e.g.
    ``GenderWords.words.items()``) not in the fixed tables, paired across genders."""
    if her not in HER_CHOICES:
        raise ValueError(f"her must be one of {HER_CHOICES}, got {her!r}")
    table: dict[str, str] = {}
    for female, male in PAIRS:
        table[female] = male
        table[male] = female
    table.update(ONE_WAY)
    table["her"] = her
    female_names = sorted({w for w, g in names if g == "f" and w not in table})
    male_names = sorted({w for w, g in names if g == "m" and w not in table})
    if female_names and male_names:
        for i, name in enumerate(female_names):
            table[name] = male_names[i % len(male_names)]
        for i, name in enumerate(male_names):
            table.setdefault(name, female_names[i % len(female_names)])
    return table


def match_case(source: str, target: str) -> str:
    """``target`` in the case pattern of ``source``: lower, Capitalised or UPPER."""
    if len(source) > 1 and source.isupper():
        return target.upper()
    if source[:1].isupper():
        return target[:1].upper() + target[1:]
    return target


class Swapper:
    """Replaces whole words of a text according to a swap table, keeping case."""

    def __init__(self, table: dict[str, str]) -> None:
        self.table = table
        alternation = "|".join(re.escape(w) for w in sorted(table, key=lambda w: (-len(w), w)))
        self.pattern = re.compile(rf"\b(?:{alternation})\b", re.IGNORECASE)

    def _replace(self, match: re.Match[str]) -> str:
        word = match.group(0)
        return match_case(word, self.table[word.lower()])

    def text(self, text: str) -> str:
        return self.pattern.sub(self._replace, text)

    def line(self, line: str) -> str:
        """A ``pid<TAB>passage`` line with only the passage rewritten (no tab: unchanged)."""
        pid, tab, passage = line.partition("\t")
        if not tab:
            return line
        return pid + tab + self.text(passage)


def _open_input(path: Path):
    """The file and its expanded bytes, through the project's one bounded gzip reader."""
    raw = open(path, "rb")  # noqa: SIM115 - closed by the caller through the returned handle
    return raw, expanded(path, raw)


def write_counterfactual(
    source: str | Path,
    destination: str | Path,
    swapper: Swapper,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Stream ``source`` (gzip detected by content) into ``destination`` (gzipped when it ends in ``.gz``, written
    atomically) with words swapped; returns the lines written. ``progress`` receives input bytes read.
    """
    source, destination = Path(source), Path(destination)
    lines = 0
    raw, stream = _open_input(source)
    with atomic_path(destination) as tmp, raw, stream, open(tmp, "wb") as handle:
        out = gzip.GzipFile(fileobj=handle, mode="wb") if destination.name.endswith(".gz") else handle
        try:
            # Lines are read with a bound: the source is a registered (checked) collection, but
            # a line over the readers' limit must not be gathered whole here either.
            while data := stream.readline(MAX_LINE_BYTES + 2):
                if len(data.removesuffix(b"\n")) > MAX_LINE_BYTES:
                    raise line_too_long(source, lines + 1)
                # Decoding strictly keeps the bytes: "\n" and "\r\n" stay in the line.
                out.write(swapper.line(data.decode("utf-8")).encode("utf-8"))
                lines += 1
                if progress and lines % 10_000 == 0:
                    progress(raw.tell())
        finally:
            if out is not handle:
                out.close()
    if progress:
        progress(source.stat().st_size)
    return lines

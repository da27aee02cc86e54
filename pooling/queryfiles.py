"""Query files: ``qid<TAB>query`` lines, the TREC / MS MARCO format rankers read.

The one reader and the one writer of the project, with one normalisation rule
(:func:`normalise_text`): the query text is kept verbatim except that tabs, line breaks
and every other control character (C0 and C1 controls, DEL, ``\r``, ``\v``, ``\f``, U+0085,
and the separators U+2028 and U+2029) become one space each: a line must stay one line
with two fields, and a query goes on into prompts, HIT pages and files where such
characters start new lines or hide text. Whitespace is not collapsed: the reference code
tokenises with ``split(" ")``, so "a  b" and "a b" are different inputs, and a query
such as "-ve blood type" reaches rankers exactly as the crowd saw it. Spreadsheet
formula neutralising belongs to CSV files for people, never here.
Pure and light (standard library only).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from core.errors import InputError, Skipped, raise_or_skip
from core.files import atomic_write
from core.textfiles import open_text

#: What :func:`normalise_text` replaces: C0 controls (tab and line breaks included), DEL, C1
#: controls (U+0085 among them) and the line and paragraph separators.
CONTROL_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def normalise_text(text: object) -> str:
    """The normalisation rule: every control character or line separator becomes one space."""
    return CONTROL_CHARACTERS.sub(" ", str(text))


def read_queries(path: str | Path, skipped: Skipped | None = None) -> list[tuple[str, str]]:
    """Read ``qid<TAB>query`` lines, in file order; the text normalised (:func:`normalise_text`).

    A line has exactly one tab: a second one is a bad line (a third column, or a query
    text holding a tab, is not the format rankers read)."""
    path = Path(path)
    queries: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    with open_text(path) as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            qid, tab, rest = line.partition("\t")
            qid, text = qid.strip(), normalise_text(rest).strip()
            if not tab:
                raise_or_skip(InputError(path, number, "no tab between query id and query text"), skipped)
            elif "\t" in rest:
                raise_or_skip(
                    InputError(path, number, "more than one tab: expected qid<TAB>query (a query text holds no tab)"),
                    skipped,
                )
            elif not qid:
                raise_or_skip(InputError(path, number, "empty query id"), skipped)
            elif not text:
                raise_or_skip(InputError(path, number, f"query {qid!r} has no text"), skipped)
            elif qid in seen:
                raise_or_skip(
                    InputError(path, number, f"query id {qid!r} repeats (first on line {seen[qid]})"), skipped
                )
            else:
                seen[qid] = number
                queries.append((qid, text))
    if not queries:
        raise InputError(path, None, "no queries")
    return queries


def single_line(text: object) -> str:
    """What the writer writes: the text normalised (:func:`normalise_text`), a CRLF as one space."""
    return normalise_text(str(text).replace("\r\n", " "))


def query_lines(queries: Iterable[tuple[object, object]]) -> Iterable[str]:
    """``qid<TAB>query\n`` for each ``(qid, query)``."""
    for qid, text in queries:
        yield f"{single_line(qid)}\t{single_line(text)}\n"


def write_queries(queries: Iterable[tuple[object, object]], path: str | Path) -> int:
    """Write a query file atomically; returns the number of queries written."""
    count = 0

    def write(handle) -> None:
        nonlocal count
        for line in query_lines(queries):
            handle.write(line)
            count += 1

    atomic_write(path, write, newline="")
    return count

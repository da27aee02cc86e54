"""Query files: ``qid<TAB>query`` lines, the TREC / MS MARCO format rankers read.

The one reader and the one writer of the project, with one normalisation rule: the
query text is kept verbatim except that tabs and line breaks become spaces (a line
must stay one line with two fields). Whitespace is not collapsed: the reference code
tokenises with ``split(" ")``, so "a  b" and "a b" are different inputs, and a query
such as "-ve blood type" reaches rankers exactly as the crowd saw it. Spreadsheet
formula neutralising belongs to CSV files for people, never here.
Pure and light (standard library only).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from core.errors import InputError, Skipped, raise_or_skip
from core.files import atomic_write
from core.textfiles import open_text


def read_queries(path: str | Path, skipped: Skipped | None = None) -> list[tuple[str, str]]:
    """Read ``qid<TAB>query`` lines (split on the first tab), in file order."""
    path = Path(path)
    queries: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    with open_text(path) as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            qid, tab, text = line.partition("\t")
            qid, text = qid.strip(), text.strip()
            if not tab:
                raise_or_skip(InputError(path, number, "no tab between query id and query text"), skipped)
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
    """The normalisation rule: tabs and line breaks become spaces, everything else stays."""
    return str(text).replace("\r\n", " ").replace("\r", " ").replace("\n", " ").replace("\t", " ")


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

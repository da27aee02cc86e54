"""Relevance judgments: TREC qrels files, ``qid iteration docid relevance`` lines. Pure (polars, standard library).

Any whitespace between the fields; the iteration column is ignored, as by trec_eval; relevance is a graded
integer as trec_eval reads it (negative: not relevant): ASCII digits with an optional minus, within
:data:`REL_RANGE` (``1_0`` or ``٣`` are bad lines, not 10 and 3). Read through
:func:`genderbias.files.textfiles.open_text`; a bad line is an :class:`~genderbias.errors.InputError` or skipped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING

from genderbias.errors import InputError, Skipped, raise_or_skip
from genderbias.files.textfiles import open_text

if TYPE_CHECKING:
    import polars as pl

__all__ = ["read_qrels"]

#: Columns of a qrels frame (what the import stores in Parquet).
QRELS_COLUMNS = ["qid", "docid", "rel"]
#: The relevance grades accepted (stored as a 32-bit integer; trec_eval reads an ``int``).
REL_RANGE = (-(2**31), 2**31 - 1)
_GRADE = re.compile(r"-?[0-9]+", re.ASCII)


def parse_grade(text: str) -> int | str:
    """The grade ``text`` stands for, or the problem with it (a string)."""
    if not _GRADE.fullmatch(text):
        return f"relevance {text!r} is not an integer (digits 0-9, optionally after a minus sign)"
    value = int(text)
    if not REL_RANGE[0] <= value <= REL_RANGE[1]:
        return f"relevance {text} is out of range ({REL_RANGE[0]:,} to {REL_RANGE[1]:,})"
    return value


def read_qrels(
    path: str | Path,
    *,
    known_qids: Collection[str] | None = None,
    known_docids: Callable[[list[str]], Collection[str]] | None = None,
    skipped: Skipped | None = None,
    source: str = "the query set",
) -> pl.DataFrame:
    """The judgments of a qrels file as a frame ``qid, docid, rel`` (file order). Bad lines: a qid outside
    ``known_qids`` (naming ``source``), a docid ``known_docids`` (given the docids read) does not return, and a
    (qid, docid) pair judged twice (naming the first).
    """
    import polars as pl

    path = Path(path)
    qids: list[str] = []
    docids: list[str] = []
    rels: list[int] = []
    lines: list[int] = []
    seen: dict[tuple[str, str], int] = {}
    with open_text(path) as text:
        for number, line in enumerate(text, start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 4:
                raise_or_skip(
                    InputError(path, number, f"expected 4 fields 'qid 0 docid relevance', found {len(fields)}"),
                    skipped,
                )
                continue
            qid, _, docid, rel = fields
            value = parse_grade(rel)
            if isinstance(value, str):
                raise_or_skip(InputError(path, number, value), skipped)
                continue
            if known_qids is not None and qid not in known_qids:
                raise_or_skip(InputError(path, number, f"query {qid!r} is not in {source}"), skipped)
                continue
            first = seen.get((qid, docid))
            if first is not None:
                raise_or_skip(
                    InputError(path, number, f"document {docid!r} is judged twice for query {qid!r} (line {first})"),
                    skipped,
                )
                continue
            seen[(qid, docid)] = number
            qids.append(qid)
            docids.append(docid)
            rels.append(value)
            lines.append(number)
    frame = pl.DataFrame(
        {"qid": qids, "docid": docids, "rel": rels, "line": lines},
        schema={"qid": pl.String, "docid": pl.String, "rel": pl.Int32, "line": pl.Int64},
    )
    if known_docids is not None and len(frame):
        known = set(known_docids(frame["docid"].unique().to_list()))
        unknown = frame.filter(~pl.col("docid").is_in(list(known)))
        for line, docid in unknown.select("line", "docid").iter_rows():
            raise_or_skip(InputError(path, line, f"document {docid!r} is not in the collection"), skipped)
        frame = frame.filter(pl.col("docid").is_in(list(known)))
    if not len(frame):
        raise InputError(path, None, "no judgments")
    return frame.select(QRELS_COLUMNS)

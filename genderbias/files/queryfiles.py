"""Query files: ``qid<TAB>query`` lines, the TREC / MS MARCO format rankers read. Pure, standard library only.

The one reader and writer, with one normalisation rule (:func:`normalise_text`): the text is kept verbatim but
every control character and line separator becomes one space, since a line must stay one line of two fields and
a query goes on into prompts, HIT pages and files. Whitespace is not collapsed: the reference code tokenises with
``split(" ")``, so "a  b" and "a b" differ. Spreadsheet formula neutralising belongs to CSV files for people.
"""

from __future__ import annotations

import csv
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from genderbias.errors import InputError, Skipped, raise_or_skip
from genderbias.files.atomic import atomic_write
from genderbias.files.textfiles import csv_records, open_text
from genderbias.labels import ACCEPTED_SPELLINGS, label_code
from genderbias.numbers import DIGITS

__all__ = [
    "MAX_QID_CHARS", "ROLES", "ColumnChoiceError", "first_table", "normalise_text", "read_queries", "read_query_table",
    "single_line", "with_columns", "write_queries",
]  # fmt: skip

#: What :func:`normalise_text` replaces: C0 controls (tab and line breaks included), DEL, C1
#: controls (U+0085 among them) and the line and paragraph separators.
CONTROL_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def normalise_text(text: object) -> str:
    """The normalisation rule: every control character or line separator becomes one space."""
    return CONTROL_CHARACTERS.sub(" ", str(text))


def read_queries(path: str | Path, skipped: Skipped | None = None) -> list[tuple[str, str]]:
    """``qid<TAB>query`` lines in file order, the text normalised; a second tab is a bad line (not the rankers'
    format)."""
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
            elif _accepted(path, number, qid, text, seen, skipped):
                queries.append((qid, text))
    if not queries:
        raise InputError(path, None, "no queries")
    return queries


#: The longest query id (the ``qid`` columns of pooling and annotation are this long): checked here, where
#: a file's line is known, so SQLite (any length) and PostgreSQL (varchar) give the same ``file:line`` answer.
MAX_QID_CHARS = 100


def _accepted(path: Path, number: int, qid: str, text: str, seen: dict[str, int], skipped: Skipped | None) -> bool:
    """The rules both readers share: an id, a text, an id not seen before (``seen``: id -> first line, updated).
    A bad line is raised, or skipped and ``False``."""
    if not qid:
        raise_or_skip(InputError(path, number, "empty query id"), skipped)
    elif len(qid) > MAX_QID_CHARS:
        raise_or_skip(InputError(path, number, f"query id of {len(qid)} characters: at most {MAX_QID_CHARS}"), skipped)
    elif not text:
        raise_or_skip(InputError(path, number, f"query {qid!r} has no text"), skipped)
    elif qid in seen:
        raise_or_skip(InputError(path, number, f"query id {qid!r} repeats (first on line {seen[qid]})"), skipped)
    else:
        seen[qid] = number
        return True
    return False


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


# --- Query tables: CSV or TSV files with a header, the study's ``qid,query,label`` ---------------

#: Header names guessed as each column (lower-cased, spaces and hyphens as ``_``), best first.
COLUMN_NAMES: dict[str, tuple[str, ...]] = {
    "qid": ("qid", "query_id", "queryid", "id", "topic_id", "topic", "number"),
    "query": ("query", "text", "query_text", "question", "title", "keywords"),
    "label": ("label", "gender", "category", "class", "annotation"),
}
#: The roles a column may play, in the order the preview shows them.
ROLES: tuple[str, ...] = ("qid", "query", "label")


class ColumnChoiceError(InputError):
    """A column choice the file cannot meet; ``path`` names the choice (``qid_column`` …), not a file."""


@dataclass(frozen=True)
class QueryTable:
    """How a query file's lines split into columns: ``header`` (None when the first line holds data), ``columns``
    (role -> 0-based column, ``label`` absent when unlabelled), ``delimiter`` (``"\\t"`` or ``","``)."""

    delimiter: str
    header: tuple[str, ...] | None
    columns: dict[str, int]
    width: int

    @property
    def names(self) -> tuple[str, ...]:
        """Every column's name: the header's, else ``column 1``, ``column 2`` …"""
        return self.header or tuple(f"column {i + 1}" for i in range(self.width))

    @property
    def labelled(self) -> bool:
        return "label" in self.columns

    @property
    def plain(self) -> bool:
        """The format rankers read (``qid<TAB>query``, no header): read by :func:`read_queries`."""
        return self.delimiter == "\t" and self.header is None and self.columns == {"qid": 0, "query": 1}


def _key(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", name.strip().strip('"').lower())


def guess_columns(header: Sequence[str]) -> dict[str, int]:
    """Each role's column, guessed from header names (:data:`COLUMN_NAMES`); a role is left out
    when no name fits, and no column plays two roles."""
    keys = [_key(name) for name in header]
    columns: dict[str, int] = {}
    for role in ROLES:
        for name in COLUMN_NAMES[role]:
            if name in keys and keys.index(name) not in columns.values():
                columns[role] = keys.index(name)
                break
    return columns


def _fields(path: Path, number: int, line: str, delimiter: str) -> list[str]:
    if delimiter == "\t":
        return line.split("\t")
    if '"' not in line:
        return line.split(",")
    try:
        return next(csv.reader([line]), [])
    except csv.Error as exc:
        raise InputError(path, number, f"not a valid csv line ({exc})") from None


def detect_table(path: str | Path, first_line: str, number: int = 1) -> QueryTable:
    """How a file is laid out, from its name and first non-blank line: TSV with a tab, else CSV; a header when it
    names a query id and a query column, else id, query and a last column read as a label when it is one."""
    path = Path(path)
    line = first_line.rstrip("\r\n")
    delimiter = (
        "\t" if "\t" in line or ("," not in line and not path.name.lower().endswith((".csv", ".csv.gz"))) else ","
    )
    fields = _fields(path, number, line, delimiter)
    guessed = guess_columns(fields)
    if "qid" in guessed and "query" in guessed:
        return QueryTable(delimiter, tuple(f.strip().strip('"') for f in fields), guessed, len(fields))
    # id and query, with a label as the third column (TSV) or a CSV line's last when it is one
    labelled = (len(fields) == 3 if delimiter == "\t" else len(fields) >= 3) and label_code(fields[-1]) is not None
    return QueryTable(delimiter, None, {"qid": 0, "query": 1, **({"label": 2} if labelled else {})}, 2 + labelled)


def with_columns(table: QueryTable, chosen: dict[str, str | int | None]) -> QueryTable:
    """``table`` with the user's columns (role -> a header name or 1-based number; ``label`` empty or ``none``:
    unlabelled); an unknown name, a number out of range or one column in two roles is a :class:`ColumnChoiceError`."""
    columns = dict(table.columns)
    keys = [_key(name) for name in table.names]
    for role in ROLES:
        value = chosen.get(role)
        if value is None or str(value).strip() == "":
            continue
        text = str(value).strip()
        if role == "label" and text.lower() in ("none", "-", "0"):
            columns.pop("label", None)
            continue
        if DIGITS.fullmatch(text) and 1 <= int(text) <= table.width:  # ASCII only: "²".isdigit() and int() raised
            columns[role] = int(text) - 1
        elif _key(text) in keys:
            columns[role] = keys.index(_key(text))
        else:
            raise ColumnChoiceError(
                f"{role}_column",
                None,
                f"no column {text!r}; the file's columns: {', '.join(table.names)} (or 1–{table.width})",
            )
    if "qid" not in columns or "query" not in columns:
        missing = [role for role in ("qid", "query") if role not in columns]
        raise ColumnChoiceError(f"{missing[0]}_column", None, f"choose the {' and '.join(missing)} column")
    used = [columns[role] for role in columns]
    if len(set(used)) != len(used):
        raise ColumnChoiceError("columns", None, "one column cannot be two of id, query and label")
    return QueryTable(table.delimiter, table.header, columns, max(table.width, max(used) + 1))


def _row(path: Path, number: int, line: str, table: QueryTable) -> list[str]:
    """A line's fields as ``table`` lays them out; an unquoted CSV line with extra fields (a query holding commas)
    gives them to the query column."""
    fields = _fields(path, number, line, table.delimiter)
    if len(fields) > table.width and table.delimiter == "," and '"' not in line:
        at = table.columns["query"]
        after = table.width - at - 1
        fields = [*fields[:at], ",".join(fields[at : len(fields) - after]), *fields[len(fields) - after :]]
    if len(fields) != table.width:
        sep = "tabs" if table.delimiter == "\t" else "commas"
        raise InputError(path, number, f"expected {table.width} columns separated by {sep}, found {len(fields)}")
    return fields


def read_query_table(
    path: str | Path,
    chosen: dict[str, str | int | None] | None = None,
    skipped: Skipped | None = None,
) -> tuple[list[tuple[str, str, str]], QueryTable]:
    """``(qid, query, label code)`` in file order (``""`` when unlabelled) and the table read, from a query file of
    any layout :func:`detect_table` knows (``chosen``: :func:`with_columns`); :func:`read_queries`' rules hold, and
    an unknown label is a bad line.
    """
    path = Path(path)
    table = first_table(path)
    if table is None:
        raise InputError(path, None, "no queries")
    table = with_columns(table, chosen or {})
    if table.plain:  # the rankers' format, read by its own reader (its messages are the ones people know)
        queries: list = read_queries(path, skipped)
        for i, (qid, text) in enumerate(queries):  # in place: never two lists of every query at once
            queries[i] = (qid, text, "")
        return queries, table
    rows: list[tuple[str, str, str]] = []
    seen: dict[str, int] = {}
    with open_text(path) as lines:
        header = table.header is not None
        # CSV: a quoted field may hold line breaks (RFC 4180), read as one record numbered by its first line.
        records = csv_records(path, lines) if table.delimiter == "," else enumerate(lines, start=1)
        for number, line in records:
            if not line.strip():
                continue
            if header:  # the first non-blank line
                header = False
                continue
            try:
                fields = _row(path, number, line, table)
            except InputError as exc:
                raise_or_skip(exc, skipped)
                continue
            qid = fields[table.columns["qid"]].strip()
            text = normalise_text(fields[table.columns["query"]]).strip()
            label = ""
            if table.labelled:
                value = fields[table.columns["label"]].strip()
                label = label_code(value) or ""
                if not label:
                    problem = f"unknown label {value!r}; use {ACCEPTED_SPELLINGS}" if value else "no label"
                    raise_or_skip(InputError(path, number, problem), skipped)
                    continue
            if _accepted(path, number, qid, text, seen, skipped):
                rows.append((qid, text, label))
    if not rows:
        raise InputError(path, None, "no queries")
    return rows, table


def first_table(path: str | Path) -> QueryTable | None:
    """:func:`detect_table` of a file's first non-blank line (None when it has none)."""
    with open_text(path) as lines:
        for number, line in enumerate(lines, start=1):
            if line.strip():
                table = detect_table(path, line, number)
                if table.delimiter != "," or '"' not in line:
                    return table
                # The first record may go on past this line (a quoted field holding a line break).
                record = next(csv_records(path, itertools.chain([line], lines)))[1]
                return detect_table(path, record, number)
    return None

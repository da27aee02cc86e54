"""CSV and TSV for people: the one writer of every download that someone may open in a spreadsheet.

A text cell a spreadsheet would evaluate (``=``, ``+``, ``-``, ``@``, a tab or a carriage return
first) gets a leading apostrophe (OWASP "CSV injection"); numbers stay numbers, so a negative score
can be summed; ``None`` and NaN are empty. Files for programs keep text verbatim and do not come
through here (docs/dataset-publishing.md). Pure Python: no Django.
"""

from __future__ import annotations

import csv
import io
import math
import numbers
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import IO, Any

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def neutralise_formula(text: str) -> str:
    """``text`` with a leading ``'`` when a spreadsheet would read it as a formula."""
    text = str(text)
    return "'" + text if text.startswith(FORMULA_PREFIXES) else text


def spreadsheet_cell(value: Any) -> Any:
    """A value as written to a CSV for people: numbers stay numbers, text is neutralised."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, (numbers.Real, Decimal)):
        number = float(value)
        return "" if math.isnan(number) else repr(number) if not isinstance(value, Decimal) else str(value)
    return neutralise_formula(value)


def write_csv(handle: IO[str], header: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    """Write ``header`` and ``rows`` (cells through :func:`spreadsheet_cell`); returns the row count."""
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow([neutralise_formula(name) for name in header])
    count = 0
    for row in rows:
        writer.writerow([spreadsheet_cell(cell) for cell in row])
        count += 1
    return count


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """:func:`write_csv` into a string."""
    out = io.StringIO()
    write_csv(out, header, rows)
    return out.getvalue()


def write_tsv(handle: IO[str], rows: Iterable[Sequence[Any]], header: Sequence[str] | None = None) -> int:
    """Tab-separated cells (each through :func:`spreadsheet_cell`, tabs and line breaks inside a
    cell made spaces), ``header`` first when given; returns the row count."""

    def line(cells: Iterable[Any]) -> str:
        return "\t".join(" ".join(str(cell).replace("\r", "\n").split("\n")).replace("\t", " ") for cell in cells)

    if header is not None:
        handle.write(line(neutralise_formula(name) for name in header) + "\n")
    count = 0
    for row in rows:
        handle.write(line(spreadsheet_cell(cell) for cell in row) + "\n")
        count += 1
    return count

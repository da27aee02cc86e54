"""Inserts of plain rows: in bulk, for the few tables that take tens of thousands at once; and a
few rows in one statement, on a hot path (the answers of a submitted HIT).

``bulk_create`` builds a model instance and compiles SQL per row. ``insert_rows`` sends the rows
through ``executemany`` on SQLite and ``COPY`` on PostgreSQL (the faster there:
docs/benchmarks.md, ``benchmarks/bulk_insert.py``), inside the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db import connection
from django.db.models import Model


def _insert_into(model: type[Model], columns: Sequence[str]) -> tuple[str, str]:
    """``("INSERT INTO table (columns) VALUES ", "(%s, …)")``: the statement's head and one row's placeholders."""
    return f"INSERT INTO {_table(model, columns)} VALUES ", "(" + ", ".join(["%s"] * len(columns)) + ")"


def _table(model: type[Model], columns: Sequence[str]) -> str:
    quote = connection.ops.quote_name
    return f"{quote(model._meta.db_table)} ({', '.join(quote(c) for c in columns)})"


def insert_rows(model: type[Model], columns: Sequence[str], rows: Iterable[Sequence]) -> None:
    """INSERT ``rows`` (tuples in ``columns`` order; column names as in the database)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor, cursor.cursor.copy(f"COPY {_table(model, columns)} FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        return
    head, one = _insert_into(model, columns)
    with connection.cursor() as cursor:  # the rows streamed, never a second list of them (an import's memory)
        cursor.executemany(head + one, iter(rows))


def insert_few_rows(model: type[Model], columns: Sequence[str], rows: Sequence[Sequence]) -> None:
    """INSERT a few ``rows`` in one statement (a multi-row ``VALUES``): what ``bulk_create`` sends,
    without building instances and compiling per call; no signals either way, ids not read back."""
    if not rows:
        return
    head, one = _insert_into(model, columns)
    with connection.cursor() as cursor:
        cursor.execute(head + ", ".join([one] * len(rows)), [value for row in rows for value in row])

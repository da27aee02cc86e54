"""Hot read queries built and compiled once per process, then run again with new values (issue 46).

On the annotator's path (next HIT, HIT page, submit) building a queryset (``filter``,
``annotate``, ``Exists``) and compiling it to SQL cost several times the CPU of running it:
each request spent most of its time in the ORM's query compiler, turning the same query into
the same SQL with only an id changed. A :class:`Prepared` query is built once with placeholder
values standing for its parameters, compiled once per database and research-group scope (the
scope is compiled in: :class:`core.models.GroupScopedQuery`), and from then on runs the stored
SQL with the values put where the placeholders were. Its rows become objects through the same
compiler as before (models with ``select_related`` and annotations, ``values()``,
``values_list()``): the statement, and so every rule it carries, is exactly the ORM's.

Parameters are ints and strings only, found in the compiled statement's parameters by their
placeholder values; a placeholder that the compiler writes into the SQL text itself, or drops,
makes the query refuse to be prepared (:class:`ImproperlyConfigured`, at its first use in a
test), so a wrong statement is never stored.

Every query says whose scope it is compiled for: ``scope=core.models.scope_of`` for one that
reads a study model (or has one in a subquery), ``scope=None`` for one that reads none (an
account, the research groups: asking for the scope there would read the user, and the user's
own query is one of them). Required, so no query is prepared for one scope and run in another.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Hashable
from typing import Any

from django.core.exceptions import EmptyResultSet, ImproperlyConfigured
from django.db import connections
from django.db.models import Expression, QuerySet

#: Placeholders: negative, far from any id this site makes, and inside a 32-bit integer column's
#: range (Django answers a lookup on a value outside it without asking the database).
_INT_BASE = -1_987_654_000
#: A statement that matches no row whatever its values (Django's ``EmptyResultSet`` at compile time,
#: e.g. an empty research-group scope): its rows are none, as the ORM answers it, without a query.
_NOTHING = object()
#: Compiled statements kept per query (one per scope and database seen): a bound, not a working size.
_MAX_KEYS = 256


def _placeholder(position: int, value: Any) -> int | str:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError(f"a prepared query takes ints and strings only, not {type(value).__name__}")
    return _INT_BASE - position if isinstance(value, int) else f"~prepared-{position}~"


class _Compiled:
    """One compiled statement: the queryset built with placeholders, its compiler, SQL and where each value goes."""

    __slots__ = ("compiler", "params", "queryset", "slots", "sql")

    def __init__(self, queryset: QuerySet, placeholders: dict[str, int | str]) -> None:
        compiler = queryset.query.get_compiler(using=queryset.db)
        sql, params = compiler.as_sql()
        slots: list[tuple[int, str]] = []
        by_value = {(type(v), v): name for name, v in placeholders.items()}
        for index, value in enumerate(params):
            name = by_value.get((type(value), value))
            if name is not None:
                slots.append((index, name))
        missing = set(placeholders) - {name for _, name in slots}
        inlined = [name for name, v in placeholders.items() if isinstance(v, str) and v in sql]
        if missing or inlined:
            raise ImproperlyConfigured(
                f"cannot prepare this query: {sorted(missing | set(inlined))} not passed as statement parameters"
            )
        self.queryset, self.compiler, self.sql, self.params, self.slots = queryset, compiler, sql, tuple(params), slots

    def run(self, values: dict[str, Any]) -> list:
        params = list(self.params)
        for index, name in self.slots:
            params[index] = values[name]
        sql, final = self.sql, tuple(params)
        compiler = copy.copy(self.compiler)
        compiler.connection = connections[self.queryset.db]  # this thread's connection
        compiler.as_sql = lambda *args, **kwargs: (sql, final)
        queryset = self.queryset._chain()
        queryset.query.get_compiler = lambda *args, **kwargs: compiler
        return list(queryset._iterable_class(queryset))


class Prepared:
    """A read query given as ``build(**values) -> QuerySet``, compiled once per database and scope.

    ``query(**values)`` returns the rows as a list, exactly as ``list(build(**values))`` would.
    """

    def __init__(self, build: Callable[..., QuerySet], *, scope: Callable[[], Hashable] | None) -> None:
        self._build, self._scope_of = build, scope
        self._compiled: dict[tuple, _Compiled] = {}
        self._lock = threading.Lock()

    def __call__(self, **values: Any) -> list:
        placeholders = {name: _placeholder(i, v) for i, (name, v) in enumerate(sorted(values.items()))}
        key = (tuple(sorted((n, type(v)) for n, v in values.items())), self._scope())
        compiled = self._compiled.get(key)
        if compiled is None:
            try:
                compiled = _Compiled(self._build(**placeholders), placeholders)
            except EmptyResultSet:  # nothing can match (an empty scope: an account of no group)
                compiled = _NOTHING
            with self._lock:
                if len(self._compiled) >= _MAX_KEYS:
                    self._compiled.clear()
                self._compiled[key] = compiled
        return [] if compiled is _NOTHING else compiled.run(values)

    def _scope(self) -> Hashable:
        return ("unscoped",) if self._scope_of is None else ("scope", self._scope_of())


class _Slot(Expression):
    """A column's new value in a prepared ``UPDATE``: one statement parameter, filled at each run."""

    def __init__(self, marker: int, output_field) -> None:
        super().__init__(output_field=output_field)
        self.marker = marker

    def as_sql(self, compiler, connection):
        return "%s", [self.marker]


class PreparedUpdate:
    """A conditional ``UPDATE`` given as ``rows(**values) -> QuerySet``, compiled once per database,
    scope and set of columns written; ``write(columns, **values)`` sets ``columns`` (a mapping of
    field name to value) on the rows and returns how many it changed, as ``rows(**values).update(**columns)``.

    The rows' filter (its subqueries and the research-group scope, added as the scoped queryset's
    own ``update`` adds it: ``narrowed()``) is the ORM's, compiled once; each column's value goes
    in as a statement parameter, prepared for the database by its field as Django's ``update``
    prepares it (``get_db_prep_save``), ``None`` included. Columns take plain values only, not
    expressions. Used where the UPDATE runs on every request (the HIT's submit, issue 46).
    """

    def __init__(self, rows: Callable[..., QuerySet], *, scope: Callable[[], Hashable] | None) -> None:
        self._rows, self._scope_of = rows, scope
        self._compiled: dict[tuple, tuple] = {}
        self._lock = threading.Lock()

    def __call__(self, columns: dict[str, Any], **values: Any) -> int:
        names = sorted(columns)
        key = (
            tuple(sorted((n, type(v)) for n, v in values.items())),
            tuple(names),
            ("unscoped",) if self._scope_of is None else ("scope", self._scope_of()),
        )
        compiled = self._compiled.get(key)
        if compiled is None:
            try:
                compiled = self._compile(names, values)
            except EmptyResultSet:  # no row can match (an empty scope): nothing to change
                compiled = _NOTHING
            with self._lock:
                if len(self._compiled) >= _MAX_KEYS:
                    self._compiled.clear()
                self._compiled[key] = compiled
        if compiled is _NOTHING:
            return 0
        db, sql, params, slots, fields = compiled
        filled = list(params)
        connection = connections[db]
        for index, name in slots:
            if name in values:
                filled[index] = values[name]
            else:
                filled[index] = fields[index].get_db_prep_save(columns[name], connection=connection)
        with connection.cursor() as cursor:
            cursor.execute(sql, filled)
            return cursor.rowcount

    def _compile(self, names: list[str], values: dict[str, Any]):
        from django.db.models import sql as sql_queries

        placeholders = {name: _placeholder(i, v) for i, (name, v) in enumerate(sorted(values.items()))}
        queryset = self._rows(**placeholders)
        narrowed = getattr(queryset, "narrowed", None)
        if narrowed is not None:
            queryset = narrowed()
        model = queryset.model
        markers = {name: _INT_BASE - len(placeholders) - i for i, name in enumerate(names)}
        query = queryset.query.chain(sql_queries.UpdateQuery)
        query.add_update_values({name: _Slot(markers[name], model._meta.get_field(name)) for name in names})
        query.annotations = {}
        sql, params = query.get_compiler(queryset.db).as_sql()
        by_value = {(type(v), v): name for name, v in placeholders.items()} | {
            (int, m): name for name, m in markers.items()
        }
        slots, fields = [], {}
        for index, value in enumerate(params):
            name = by_value.get((type(value), value))
            if name is not None:
                slots.append((index, name))
                if name in markers:
                    fields[index] = model._meta.get_field(name)
        found = [name for _, name in slots]
        inlined = [name for name, v in placeholders.items() if isinstance(v, str) and v in sql]
        missing = (set(placeholders) | set(markers)) - set(found)
        if missing or inlined:
            raise ImproperlyConfigured(
                f"cannot prepare this update: {sorted(missing | set(inlined))} not passed as statement parameters"
            )
        return queryset.db, sql, tuple(params), slots, fields

"""Hot read queries built and compiled once per process, then run again with new values (issue 46).

On the annotator's path, building and compiling a queryset cost several times the CPU of running
it, turning the same query into the same SQL with only an id changed. A :class:`Prepared` query is
built once with placeholder values standing for its parameters, compiled once per database and
research-group scope, and then runs the stored SQL with the values put where the placeholders
were; its rows become objects through the same compiler: the statement is exactly the ORM's.

Parameters are ints and strings only, found in the compiled statement's parameters by their
placeholder values; a placeholder the compiler writes into the SQL text, or drops, makes the query
refuse to be prepared (:class:`ImproperlyConfigured`), so a wrong statement is never stored.

Every query says whose scope it is compiled for: ``scope=core.models.scope_of`` for one that reads
a study model, ``scope=None`` for one that reads none (an account, the research groups). Required,
so no query is prepared for one scope and run in another.
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
        self.slots = _slots(sql, params, placeholders, "query")
        self.queryset, self.compiler, self.sql, self.params = queryset, compiler, sql, tuple(params)

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


def _slots(sql: str, params: list, placeholders: dict[str, int | str], what: str) -> list[tuple[int, str]]:
    """``(index, name)`` of each statement parameter that is a placeholder; ``ImproperlyConfigured``
    when one is missing or written into the SQL text (see the module docstring)."""
    by_value = {(type(v), v): name for name, v in placeholders.items()}
    slots = [(i, by_value[(type(v), v)]) for i, v in enumerate(params) if (type(v), v) in by_value]
    missing = set(placeholders) - {name for _, name in slots}
    inlined = [name for name, v in placeholders.items() if isinstance(v, str) and v in sql]
    if missing or inlined:
        raise ImproperlyConfigured(
            f"cannot prepare this {what}: {sorted(missing | set(inlined))} not passed as statement parameters"
        )
    return slots


class _CompiledOnce:
    """What :class:`Prepared` and :class:`PreparedUpdate` share: statements kept by key (the values'
    names and types, the scope, ...), compiled at first use."""

    def __init__(self, build: Callable[..., QuerySet], *, scope: Callable[[], Hashable] | None) -> None:
        self._build, self._scope_of = build, scope
        self._compiled: dict[tuple, Any] = {}
        self._lock = threading.Lock()

    def _key(self, values: dict[str, Any], *more: Hashable) -> tuple:
        scope = ("unscoped",) if self._scope_of is None else ("scope", self._scope_of())
        return (tuple(sorted((n, type(v)) for n, v in values.items())), *more, scope)

    def _compiled_for(self, key: tuple, compile: Callable[[], Any]) -> Any:
        compiled = self._compiled.get(key)
        if compiled is None:
            try:
                compiled = compile()
            except EmptyResultSet:  # nothing can match (an empty scope: an account of no group)
                compiled = _NOTHING
            with self._lock:
                if len(self._compiled) >= _MAX_KEYS:
                    self._compiled.clear()
                self._compiled[key] = compiled
        return compiled


class Prepared(_CompiledOnce):
    """A read query given as ``build(**values) -> QuerySet``, compiled once per database and scope;
    ``query(**values)`` returns the rows as a list, exactly as ``list(build(**values))`` would."""

    def __call__(self, **values: Any) -> list:
        placeholders = {name: _placeholder(i, v) for i, (name, v) in enumerate(sorted(values.items()))}
        compiled = self._compiled_for(self._key(values), lambda: _Compiled(self._build(**placeholders), placeholders))
        return [] if compiled is _NOTHING else compiled.run(values)


class _Slot(Expression):
    """A column's new value in a prepared ``UPDATE``: one statement parameter, filled at each run."""

    def __init__(self, marker: int, output_field) -> None:
        super().__init__(output_field=output_field)
        self.marker = marker

    def as_sql(self, compiler, connection):
        return "%s", [self.marker]


class PreparedUpdate(_CompiledOnce):
    """A conditional ``UPDATE`` given as ``rows(**values) -> QuerySet``, compiled once per database,
    scope and set of columns written; ``write(columns, **values)`` sets ``columns`` (field name ->
    plain value) on the rows and returns how many it changed, as ``rows(**values).update(**columns)``.

    The rows' filter (scope included, as the scoped queryset's ``update`` adds it) is the ORM's; each
    column's value goes in as a statement parameter, prepared by its field as Django's ``update`` does.
    """

    def __call__(self, columns: dict[str, Any], **values: Any) -> int:
        names = sorted(columns)
        compiled = self._compiled_for(self._key(values, tuple(names)), lambda: self._compile(names, values))
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
        queryset = self._build(**placeholders)
        narrowed = getattr(queryset, "narrowed", None)
        if narrowed is not None:
            queryset = narrowed()
        model = queryset.model
        markers = {name: _INT_BASE - len(placeholders) - i for i, name in enumerate(names)}
        query = queryset.query.chain(sql_queries.UpdateQuery)
        query.add_update_values({name: _Slot(markers[name], model._meta.get_field(name)) for name in names})
        query.annotations = {}
        sql, params = query.get_compiler(queryset.db).as_sql()
        slots = _slots(sql, params, placeholders | markers, "update")
        fields = {index: model._meta.get_field(name) for index, name in slots if name in markers}
        return queryset.db, sql, tuple(params), slots, fields

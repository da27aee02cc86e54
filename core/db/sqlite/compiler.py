"""Django's SQL compilers for SQLite, with a foreign key's prefetch read as an ``IN`` list.

Django 5.2 reads a forward foreign key's prefetch with a ``TupleIn`` lookup, which on SQLite becomes
``id = ? OR id = ? OR ...``: one expression-tree level per row, failing past
``SQLITE_MAX_EXPR_DEPTH`` ("Expression tree is too large"). A lookup on one column is an ``IN``
list here, in chunks of ``max_query_params`` values; a tuple of several columns keeps Django's.
"""

from __future__ import annotations

from django.core.exceptions import EmptyResultSet
from django.db.models.fields.tuple_lookups import TupleIn
from django.db.models.lookups import In
from django.db.models.sql import compiler as django
from django.db.models.sql.where import OR, WhereNode


def _one_column_in(node: TupleIn, connection) -> WhereNode | None:
    """``node`` as ``col IN (...)`` lookups, ORed per chunk, when it is on one column with listed values."""
    if not node.rhs_is_direct_value() or len(node.lhs) != 1:
        return None
    (column,) = list(node.lhs)
    values = list(dict.fromkeys(vals[0] for vals in node.rhs if vals[0] is not None))
    if not values:
        raise EmptyResultSet
    size = max(1, connection.features.max_query_params or 999)
    return WhereNode([In(column, values[i : i + size]) for i in range(0, len(values), size)], connector=OR)


class _OneColumnTuples:
    def compile(self, node):
        if isinstance(node, TupleIn):
            replaced = _one_column_in(node, self.connection)
            if replaced is not None:
                return super().compile(replaced)
        return super().compile(node)


# Django's compilers, each with the rewrite (Django finds them by name in ``compiler_module``).
for _name in ("SQLCompiler", "SQLInsertCompiler", "SQLDeleteCompiler", "SQLUpdateCompiler", "SQLAggregateCompiler"):
    globals()[_name] = type(_name, (_OneColumnTuples, getattr(django, _name)), {"__module__": __name__})

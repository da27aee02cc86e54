"""The change log behind the kept counts of a batch's answers, on SQLite (issue 31).

Triggers add a row to ``annotation_answers_change`` on every UPDATE and DELETE of judgments,
assignments, HITs and batch queries, whatever the code that writes them (a service, a bulk
update, the admin, a shell); their INSERTs move the tables' AUTOINCREMENT sequences. Together
they are :func:`annotation.crowd.selectors.changes_stamp`, under which the counts are kept.

Made after every ``migrate`` (``post_migrate``, :class:`annotation.apps.AnnotationConfig`), not
by a migration: a migration that rebuilds one of these tables (SQLite rebuilds a table to alter
it) drops its triggers, and the next ``post_migrate`` makes them again; until then the stamp is
None and the counts are read afresh. The triggers name no other table, so they never stop such
a rebuild. Nothing on PostgreSQL, whose sequences do not follow the order of commits (the
counts are read at each request there).
"""

from __future__ import annotations

from django.db import connections

from annotation.crowd.selectors import CHANGES, COUNTED_TABLES


def install_change_log(using: str = "default") -> bool:
    """Make the log and its triggers where missing (SQLite, with the counted tables migrated);
    whether they are there."""
    connection = connections[using]
    if connection.vendor != "sqlite":
        return False
    with connection.cursor() as cursor:
        if not set(COUNTED_TABLES) <= set(connection.introspection.table_names(cursor)):
            return False  # migrated part of the way: the next migrate makes them
        cursor.execute(f'CREATE TABLE IF NOT EXISTS "{CHANGES}" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT)')
        for table in COUNTED_TABLES:
            for operation in ("update", "delete"):
                cursor.execute(
                    f'CREATE TRIGGER IF NOT EXISTS "{trigger_name(table, operation)}" AFTER {operation.upper()} '
                    f'ON "{table}" BEGIN INSERT INTO "{CHANGES}" ("id") VALUES (NULL); END'
                )
    return True


def trigger_name(table: str, operation: str) -> str:
    return f"answers_change_{table.removeprefix('annotation_')}_{operation}"

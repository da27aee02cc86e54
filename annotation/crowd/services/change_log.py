"""The change counter behind the kept counts of a batch's answers, on SQLite (issue 31).

Triggers add one to the single row of ``annotation_answers_change`` on every INSERT, UPDATE and
DELETE of judgments, assignments, HITs and batch queries, whatever the code that writes them (a
service, a bulk update, the admin, a shell, a restore with ids of its own). That row (its
counter and a token drawn at every ``migrate``, so that no other database, copy or migrated
state repeats a stamp) is :func:`annotation.crowd.selectors.changes_stamp`, under which the
counts are kept. After restoring a database from a copy, run ``migrate`` (it draws a new token).
One row, not a row per change: the counter stays one row however long the study runs, and
SQLite writes one transaction at a time, so no writer ever waits on it (on PostgreSQL such a row
would queue every hand-out; nothing is made there, and the counts are read at each request).

Made after every ``migrate`` (``post_migrate``, :class:`annotation.apps.AnnotationConfig`), not
by a migration: a migration that rebuilds one of these tables (SQLite rebuilds a table to alter
it) drops its triggers, and the next ``post_migrate`` makes them again; until then the stamp is
None and the counts are read afresh. The triggers name no table but the counter's, so they never
stop such a rebuild.
"""

from __future__ import annotations

import secrets

from django.db import connections

from annotation.crowd.selectors import CHANGES, COUNTED_TABLES, trigger_name


def install_change_log(using: str = "default") -> bool:
    """Make the counter and its triggers where missing (SQLite, with the counted tables
    migrated); whether they are there."""
    connection = connections[using]
    if connection.vendor != "sqlite":
        return False
    with connection.cursor() as cursor:
        if not set(COUNTED_TABLES) <= set(connection.introspection.table_names(cursor)):
            return False  # migrated part of the way: the next migrate makes them
        cursor.execute(
            f'CREATE TABLE IF NOT EXISTS "{CHANGES}" ("id" integer NOT NULL PRIMARY KEY CHECK ("id" = 1), '
            '"changes" integer NOT NULL, "token" text NOT NULL)'
        )
        # A new token at every migrate: while a migration rebuilt a counted table its triggers
        # were gone and its writes uncounted, and a database restored from a copy has the copy's
        # counter; the counts kept under an older token are never read again.
        cursor.execute(
            f'INSERT INTO "{CHANGES}" ("id", "changes", "token") VALUES (1, 0, %s) '
            'ON CONFLICT ("id") DO UPDATE SET "token" = excluded."token"',
            [secrets.token_hex(8)],
        )
        for table in COUNTED_TABLES:
            for operation in ("insert", "update", "delete"):
                cursor.execute(
                    f'CREATE TRIGGER IF NOT EXISTS "{trigger_name(table, operation)}" AFTER {operation.upper()} '
                    f'ON "{table}" BEGIN UPDATE "{CHANGES}" SET "changes" = "changes" + 1 WHERE "id" = 1; END'
                )
    return True

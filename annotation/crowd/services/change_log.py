"""The change counter behind the kept counts of a batch's answers, on SQLite.

Triggers add one to a single row on every write to the counted tables, whatever code writes; with
the token drawn at every ``migrate`` it is :func:`annotation.crowd.selectors.changes_stamp` (after a
restore, run ``migrate``). Made after every ``migrate``, not by a migration: a table rebuild drops
its triggers. Not on PostgreSQL, where the row would queue every hand-out.
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
        # A new token at every migrate: writes during a rebuild went uncounted, and a restored copy
        # has the copy's counter; counts kept under an older token are never read again.
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

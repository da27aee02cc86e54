"""The table of the results cache (``CACHES["results"]`` without Redis), apart from ``shared_cache``.

A database cache culls a third of its table when it holds more than ``MAX_ENTRIES`` rows, and
``clear()`` empties the whole table: sharing ``shared_cache`` with the arrivals' rate-limit
counters, pause and remembered refusals, many cached results could wipe them. Made exactly as
``createcachetable`` makes it, as 0016 does; kept when it exists. The results cached in
``shared_cache`` before (keys ``results:...``, the cache's key prefix) are removed from it:
they are only computed again once, under the same answers' version.
"""

from django.core.management.commands.createcachetable import Command as CreateCacheTable
from django.db import migrations

TABLE = "results_cache"
SHARED_TABLE = "shared_cache"


def create_table(apps, schema_editor) -> None:
    command = CreateCacheTable()
    command.verbosity = 0
    command.create_table(schema_editor.connection.alias, TABLE, dry_run=False)
    connection = schema_editor.connection
    if SHARED_TABLE in connection.introspection.table_names():
        with connection.cursor() as cursor:
            cursor.execute(
                f"DELETE FROM {connection.ops.quote_name(SHARED_TABLE)} WHERE cache_key LIKE %s", ["results:%"]
            )


def drop_table(apps, schema_editor) -> None:
    connection = schema_editor.connection
    if TABLE in connection.introspection.table_names():
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE {connection.ops.quote_name(TABLE)}")


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0015_prolific_arrivals"),
    ]

    operations = [migrations.RunPython(create_table, drop_table)]

"""The table of the cache every process shares (``CACHES["shared"]`` without Redis).

Prolific arrivals keep their rate-limit counters and remembered refusals there
(``core.ratelimit``), so ``migrate`` alone prepares a deployment: no separate
``createcachetable``. Made exactly as ``createcachetable`` makes it; kept when it exists.
"""

from django.core.management.commands.createcachetable import Command as CreateCacheTable
from django.db import migrations

TABLE = "shared_cache"


def create_table(apps, schema_editor) -> None:
    command = CreateCacheTable()
    command.verbosity = 0
    command.create_table(schema_editor.connection.alias, TABLE, dry_run=False)


def drop_table(apps, schema_editor) -> None:
    connection = schema_editor.connection
    if TABLE in connection.introspection.table_names():
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE {connection.ops.quote_name(TABLE)}")


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0014_team_state"),
    ]

    operations = [migrations.RunPython(create_table, drop_table)]

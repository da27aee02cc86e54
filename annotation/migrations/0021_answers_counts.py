"""What a batch's counts read, counted once per change (issue 31).

- A partial index of the gold questions by batch: a batch's progress counts its queries along
  the batch's index and its few gold questions along this one, reading no query row.
- On SQLite, a log of changes (``annotation_answers_change``): triggers add a row to it on
  every UPDATE and DELETE of judgments, assignments, HITs and batch queries, whatever the code
  that writes them; their INSERTs move the tables' AUTOINCREMENT sequences. The sequences and the
  log's last row (read in O(1)) change with every write to what the counts read, so the counts
  are kept per that stamp (:func:`annotation.crowd.selectors.answer_counts`). The triggers name
  no other table: a later migration rebuilding one of these tables drops its triggers (the
  counts are then read afresh, never kept) but is never refused by them. PostgreSQL: nothing
  (its sequences do not follow the order of commits; the counts are read at each request).

No row changes.
"""

from django.db import migrations, models

CHANGES = "annotation_answers_change"
TABLES = ("annotation_judgment", "annotation_assignment", "annotation_hit", "annotation_batchquery")
OPERATIONS = ("update", "delete")


def trigger_name(table: str, operation: str) -> str:
    return f"answers_change_{table.removeprefix('annotation_')}_{operation}"


def create_log(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    schema_editor.execute(f'CREATE TABLE IF NOT EXISTS "{CHANGES}" ("id" integer NOT NULL PRIMARY KEY AUTOINCREMENT)')
    for table in TABLES:
        for operation in OPERATIONS:
            schema_editor.execute(
                f'CREATE TRIGGER IF NOT EXISTS "{trigger_name(table, operation)}" AFTER {operation.upper()} '
                f'ON "{table}" BEGIN INSERT INTO "{CHANGES}" ("id") VALUES (NULL); END'
            )


def drop_log(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    for table in TABLES:
        for operation in OPERATIONS:
            schema_editor.execute(f'DROP TRIGGER IF EXISTS "{trigger_name(table, operation)}"')
    schema_editor.execute(f'DROP TABLE IF EXISTS "{CHANGES}"')


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0020_judgment_invalid_index"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="batchquery",
            index=models.Index(condition=models.Q(("is_gold", True)), fields=["batch"], name="batchquery_gold"),
        ),
        migrations.RunPython(create_log, drop_log, elidable=False),
    ]

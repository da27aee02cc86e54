"""``migrate`` on a new database: made in one step only when that is the migrations' whole effect,
and all or nothing (``core.db.new_database``; the schema comparison is in test_migrations.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.db import migrations, models

from core.db.migrations import CreateModels
from core.db.new_database import new_database_plan

ROOT = Path(__file__).resolve().parents[2]


def _plan_of(*operations):
    migration = migrations.Migration("0001_probe", "probe")
    migration.operations = list(operations)

    graph = SimpleNamespace(leaf_nodes=lambda: [("probe", "0001_probe")])
    executor = SimpleNamespace(
        loader=SimpleNamespace(graph=graph), migration_plan=lambda targets, clean_start=False: [(migration, False)]
    )
    return new_database_plan(executor)


def _model(name="Thing"):
    return migrations.CreateModel(name, [("id", models.AutoField(primary_key=True))])


def _forwards(apps, schema_editor):
    pass


class CountingAddField(migrations.AddField):
    """A subclass of a schema operation: it may do more in ``database_forwards``."""


@pytest.mark.parametrize(
    "operations",
    [
        [_model(), migrations.AddField("thing", "size", models.IntegerField(default=0))],
        [CreateModels([_model("A"), _model("B")]), migrations.AddIndex("a", models.Index(fields=["id"], name="a_i"))],
        [migrations.RunPython(migrations.RunPython.noop, _forwards)],
        [migrations.AlterModelTable("thing", "other"), migrations.RenameField("thing", "size", "length")],
    ],
)
def test_a_plan_of_schema_changes_is_made_in_one_step(operations):
    assert _plan_of(*operations) is not None


@pytest.mark.parametrize(
    "operations",
    [
        [_model(), migrations.RunSQL("CREATE INDEX thing_raw ON probe_thing (id)")],
        [migrations.SeparateDatabaseAndState(database_operations=[migrations.RunSQL("SELECT 1")])],
        # A data migration run with the final models would not see the columns of its time.
        [_model(), migrations.RunPython(_forwards)],
        # The database side of a SeparateDatabaseAndState need not end where its state does.
        [migrations.SeparateDatabaseAndState(database_operations=[_model()], state_operations=[])],
        [CountingAddField("thing", "size", models.IntegerField(default=0))],
    ],
)
def test_a_plan_with_more_than_schema_changes_nobody_read_is_replayed(operations):
    """Raw SQL, data steps, a database side apart from the state, custom operations: only a
    replay makes what they make, unless the migration was read for a new database (REVIEWED)."""
    assert _plan_of(*operations) is None


def test_a_migration_that_is_not_atomic_is_replayed():
    assert _plan_of(_model()) is not None
    migration_atomic = migrations.Migration.atomic
    try:
        migrations.Migration.atomic = False
        assert _plan_of(_model()) is None
    finally:
        migrations.Migration.atomic = migration_atomic


def test_every_migration_read_for_a_new_database_is_in_the_plan():
    """``REVIEWED`` names real migrations and functions (a renamed one would be replayed silently)."""
    from django.db.migrations.loader import MigrationLoader

    from core.db.new_database import REVIEWED

    graph = MigrationLoader(None, ignore_no_migrations=True).graph  # from the files alone
    for key, functions in REVIEWED.items():
        migration = graph.nodes[key]
        names = {op.code.__name__ for op in migration.operations if isinstance(op, migrations.RunPython)}
        assert functions <= names, key


PROBE = r"""
import io, json, sys
import django
django.setup()
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

def broken(self):
    raise RuntimeError("the last step failed")

original = MigrationExecutor.check_replacements
MigrationExecutor.check_replacements = broken
try:
    call_command("migrate", verbosity=0)
    failed = None
except RuntimeError as error:
    failed = str(error)
left = connection.introspection.table_names()
MigrationExecutor.check_replacements = original
said = io.StringIO()
call_command("migrate", verbosity=1, stdout=said)
from django.contrib.contenttypes.models import ContentType
print(json.dumps({
    "failed": failed,
    "left": left,
    "second": "A new database" in said.getvalue(),
    "tables": len(connection.introspection.table_names()),
    "content_types": ContentType.objects.count(),
}))
"""


@pytest.mark.slow
@pytest.mark.embedded
def test_a_failure_while_making_a_new_database_leaves_it_empty(tmp_path):
    """All of it is one transaction: after a failure at its last step no table is left, so
    the next ``migrate`` sees a new database again and makes it."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PYTHONPATH": str(ROOT),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "VAR_DIR": str(tmp_path / "var"),
    }
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["failed"] == "the last step failed"
    assert seen["left"] == []
    assert seen["second"] is True
    assert seen["tables"] > 40 and seen["content_types"] > 40

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


@pytest.mark.parametrize(
    "operations",
    [
        [_model(), migrations.AddField("thing", "size", models.IntegerField(default=0))],
        [CreateModels([_model("A"), _model("B")]), migrations.AddIndex("a", models.Index(fields=["id"], name="a_i"))],
        [migrations.RunPython(_forwards, migrations.RunPython.noop)],
        [migrations.SeparateDatabaseAndState(database_operations=[_model()], state_operations=[])],
        [migrations.AlterModelTable("thing", "other"), migrations.RenameField("thing", "size", "length")],
    ],
)
def test_a_plan_of_schema_changes_and_python_is_made_in_one_step(operations):
    assert _plan_of(*operations) is not None


@pytest.mark.parametrize(
    "operations",
    [
        [_model(), migrations.RunSQL("CREATE INDEX thing_raw ON probe_thing (id)")],
        [migrations.SeparateDatabaseAndState(database_operations=[migrations.RunSQL("SELECT 1")])],
    ],
)
def test_raw_sql_anywhere_in_the_plan_makes_migrate_replay_it(operations):
    """Raw SQL may make what no model describes: only replaying it makes it."""
    assert _plan_of(*operations) is None


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

"""The squashed migrations: a new database and an existing one end with the same schema, rows kept.

pooling's and annotation's migrations are squashed (``<app>/migrations/0001_squashed_*.py``,
``replaces`` the originals, which stay). Django runs a squash on a database where none of its originals
is applied; a database where only some are runs the remaining originals. Three databases,
each migrated in a fresh interpreter as ``manage.py migrate`` would:

- **fresh**: ``migrate`` on an empty file, which runs the squashes;
- **middle**: an existing deployment's database, made with the ORIGINAL migrations up to a
  middle point chosen to cross every special case (pooling before the job table moved to
  ``core``, no ``core`` at all, annotation before its data migration of 0008, metrics at
  0001), filled with rows through the historical models of that point, then ``migrate``d;
- **all**: every original applied, then ``migrate``d (nothing to run; the squashes are
  recorded as applied).

The three must have the same tables, columns (name, type, nullability) and constraints
(columns, kind, name where Django names it), every squash recorded as applied, and the
middle database its rows, with 0008's data migration applied to them.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = r"""
import json, sys
import django
django.setup()
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.state import ProjectState

mode = sys.argv[1]
MIDDLE = [("pooling", "0001_initial"), ("annotation", "0007_quality_loop"), ("metrics", "0001_initial")]


def apply_originals(targets):
    # What a deployment made before the squashes existed: the original migrations only.
    loader = MigrationLoader(connection, replace_migrations=False)
    plan = []
    for target in targets:
        for key in loader.graph.forwards_plan(target):
            if key not in plan and not loader.graph.nodes[key].replaces:
                plan.append(key)
    executor = MigrationExecutor(connection)
    executor.loader = loader
    state = ProjectState(real_apps=loader.unmigrated_apps)
    for key in plan:
        state = executor.apply_migration(state, loader.graph.nodes[key])
    return state.apps


def fill(apps):
    # Rows through the historical models of the middle point.
    import datetime
    from decimal import Decimal

    get = apps.get_model
    get("pooling", "Job").objects.create(kind="scan", description="kept across the move to core")
    collection = get("pooling", "Collection").objects.create(
        name="c", path="/c.tsv", size=10, sha256="a" * 64, passages=2, docid_index="/c.parquet"
    )
    queries = get("pooling", "QuerySet").objects.create(name="q")
    for i, text in enumerate(["his job", "her job"]):
        get("pooling", "Query").objects.create(query_set=queries, qid=f"q{i}", text=text, position=i)
    get("pooling", "Run").objects.create(
        name="r", path="/r.trec", sha256="b" * 64, queries=2, rows=20, data="/r.parquet", collection=collection
    )
    day = datetime.timedelta(days=1)
    batch = get("annotation", "Batch").objects.create(
        name="b", provider="prolific", reward=Decimal("0.50"), lifetime=day, assignment_duration=day,
        auto_approval_delay=day, hit_type_id="STUDY1", query_set=queries,
    )
    bq = get("annotation", "BatchQuery").objects.create(batch=batch, qid="q0", text="his job", position=0)
    hit = get("annotation", "Hit").objects.create(batch=batch, position=0, unique_token="t0", max_assignments=3)
    get("annotation", "HitQuery").objects.create(hit=hit, batch_query=bq, position=0)
    identity = get("annotation", "WorkerIdentity").objects.create(provider="prolific", external_id="P1")
    worker = get("annotation", "Worker").objects.create(pseudonym="w1", provider="prolific", identity=identity)
    assignment = get("annotation", "Assignment").objects.create(hit=hit, worker=worker, provider_assignment_id="A1")
    get("annotation", "Judgment").objects.create(assignment=assignment, batch_query=bq, label="m")


def schema():
    out = {}
    with connection.cursor() as cursor:
        for table in sorted(connection.introspection.table_names(cursor)):
            columns = sorted(
                [c.name, str(c.type_code), bool(c.null_ok)]
                for c in connection.introspection.get_table_description(cursor, table)
            )
            constraints = []
            for name, c in connection.introspection.get_constraints(cursor, table).items():
                # SQLite names what Django leaves unnamed by position (fk_0, sqlite_autoindex_t_1...).
                # PostgreSQL names a primary key when it creates the table (``<table>_pkey``) and
                # keeps that name when Django renames the table (core's job table was pooling's).
                anonymous = (
                    name.startswith(("sqlite_autoindex", "__unnamed_constraint", "__primary__"))
                    or (connection.vendor == "sqlite" and c["foreign_key"])
                    or c["primary_key"]
                )
                constraints.append(
                    [
                        "" if anonymous else name,
                        c["columns"] or [],
                        bool(c["primary_key"]),
                        bool(c["unique"]),
                        list(c["foreign_key"] or []),
                        bool(c["check"]),
                        bool(c["index"]),
                    ]
                )
            out[table] = {"columns": columns, "constraints": sorted(constraints, key=json.dumps)}
    return out


def rows():
    from annotation.models import Batch, Judgment
    from core.models import Job
    from pooling.models import Query, Run

    batch = Batch.objects.get(name="b")
    return {
        "job": list(Job.objects.values_list("kind", "description", "task", "attempts")),
        "queries": list(Query.objects.order_by("position").values_list("qid", "text")),
        "run": list(Run.objects.values_list("name", "collection__name")),
        "completion_code": batch.provider_options.get("completion_code"),
        "batch_id": batch.pk,
        "judgments": list(Judgment.objects.values_list("label", "assignment__worker__pseudonym", "batch_query__qid")),
    }


if mode == "middle":
    fill(apply_originals(MIDDLE))
elif mode == "all":
    loader = MigrationLoader(connection, replace_migrations=False)
    apply_originals([key for key in loader.graph.leaf_nodes() if not loader.graph.nodes[key].replaces])
import io

said = io.StringIO()
call_command("migrate", verbosity=1, stdout=said, replay=mode == "replayed")
recorded = set(MigrationLoader(connection).applied_migrations)
squashes = sorted(
    f"{app}.{name}" for app, name in recorded if app in ("core", "pooling", "annotation", "metrics") and "squashed" in name
)
from django.contrib.auth.models import Permission

print(
    json.dumps(
        {
            "schema": schema(),
            "squashes": squashes,
            "recorded": sorted(f"{app}.{name}" for app, name in recorded),
            "permissions": sorted(Permission.objects.values_list("content_type__app_label", "codename")),
            "made_from_models": "A new database" in said.getvalue(),
            "rows": rows() if mode == "middle" else None,
        }
    )
)
"""


#: The suite's PostgreSQL server when it runs on one (bin/test's second stage), else None.
SUITE_POSTGRES = (
    os.environ.get("DATABASE_URL", "") if os.environ.get("DATABASE_URL", "").startswith("postgres") else None
)


@pytest.fixture(params=[pytest.param("sqlite", marks=pytest.mark.embedded), "postgresql"])
def new_database(request, tmp_path):
    """``new_database(name)``: the URL of a new, empty database of the parametrised kind
    (PostgreSQL: on the suite's server, dropped afterwards)."""
    if request.param == "sqlite":
        yield lambda name: f"sqlite:///{tmp_path / name}.sqlite3"
        return
    if SUITE_POSTGRES is None:
        pytest.skip("PostgreSQL: run by bin/test's PostgreSQL stage (DATABASE_URL=postgres://...)")
    import uuid

    import psycopg

    server, made = SUITE_POSTGRES.rsplit("/", 1)[0], []

    def make(name: str) -> str:
        database = f"migrations_{name}_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{database}"')
        made.append(database)
        return f"{server}/{database}"

    yield make
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        for database in made:
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def _migrated(mode: str, tmp_path: Path, url: str | None = None) -> dict:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PYTHONPATH": str(ROOT),
        "DATABASE_URL": url or f"sqlite:///{tmp_path / mode}.sqlite3",
        "VAR_DIR": str(tmp_path / f"var-{mode}"),
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE, mode], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_database_migrated_with_the_originals_ends_like_a_new_one_and_keeps_its_rows(tmp_path, new_database):
    """A new database made from the models (``migrate``'s default), one made by replaying the
    squashes (``--replay``), a deployment's database part-migrated with the originals and one with
    every original: the same tables, columns, constraints, recorded migrations and permissions."""
    fresh = _migrated("fresh", tmp_path, new_database("fresh"))
    replayed = _migrated("replayed", tmp_path, new_database("replayed"))
    middle = _migrated("middle", tmp_path, new_database("middle"))
    everything = _migrated("all", tmp_path, new_database("all"))

    assert [fresh["made_from_models"], replayed["made_from_models"], middle["made_from_models"]] == [True, False, False]
    assert everything["made_from_models"] is False
    assert "core_job" in fresh["schema"] and "pooling_job" not in fresh["schema"]
    assert {"shared_cache", "results_cache"} <= set(fresh["schema"])
    assert len(fresh["permissions"]) > 100
    for other in (replayed, middle, everything):
        assert set(other["schema"]) == set(fresh["schema"])
        differing = [table for table, described in fresh["schema"].items() if other["schema"][table] != described]
        assert differing == [], {t: (other["schema"][t], fresh["schema"][t]) for t in differing}
        assert other["recorded"] == fresh["recorded"]
        assert other["permissions"] == fresh["permissions"]

    squashes = [
        "annotation.0001_squashed_0019_prolific_groups_bonuses",
        "pooling.0001_squashed_0006_collection_source",
    ]
    assert fresh["squashes"] == replayed["squashes"] == middle["squashes"] == everything["squashes"] == squashes

    rows = middle["rows"]
    assert rows["job"] == [["scan", "kept across the move to core", "", 0]]  # 0003's columns added with defaults
    assert rows["queries"] == [["q0", "his job"], ["q1", "her job"]]
    assert rows["run"] == [["r", "c"]]
    assert rows["judgments"] == [["m", "w1", "q0"]]
    # 0008 ran on this existing batch (the squash leaves that data migration out): a study
    # already on Prolific keeps the code derived from its id and creation time.
    assert rows["completion_code"].startswith(f"C{rows['batch_id']:X}")


@pytest.mark.django_db
def test_the_models_need_no_new_migration():
    """The squashes and the originals both end at the models (``makemigrations --check`` would exit 1)."""
    from django.core.management import call_command

    call_command("makemigrations", check=True, dry_run=True, verbosity=0)


MIGRATE_PROBE = """
import json, sys
APPS = ("core", "pooling", "annotation", "metrics")
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0, skip_checks=False)  # as manage.py runs it (call_command skips them)
print(json.dumps({"urls": "config.urls" in sys.modules, "views": sorted(m for m in sys.modules if m.split(".")[0] in APPS and ".views" in m)}))
"""


@pytest.mark.slow
@pytest.mark.embedded
def test_migrate_runs_the_checks_a_command_needs_without_importing_the_site(tmp_path):
    """``manage.py migrate`` (core's, over Django's) checks models and the database, not the
    URLs, templates and API, whose checks import every view (about 0.4 s of a new database's migrate)."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PYTHONPATH": str(ROOT),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "VAR_DIR": str(tmp_path / "var"),
    }
    done = subprocess.run(
        [sys.executable, "-c", MIGRATE_PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded == {"urls": False, "views": []}

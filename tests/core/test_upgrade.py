"""An upgrade a lab can trust: an earlier main's demo database upgraded as docs/deployment.md says.

The earlier main (:data:`OLD_MAIN`, the last main before issue 67) is taken from this checkout's own
history (``git archive``), and its ``manage.py migrate`` and ``manage.py demo`` run with this venv on a
new database (SQLite; PostgreSQL on the suite's server in bin/test's PostgreSQL stage), as ``bin/demo``
runs them. Then every row of every table and every file under ``VAR_DIR`` (the reports' cached results,
the runs' and collections' Parquet, the demo's CSVs, dataset folder and paper bundle) is read, this
checkout's ``manage.py`` lines of docs/deployment.md's "Upgrading" section are run on the same database,
as written, and everything is read again:

- every table that existed keeps every row (matched by primary key) with the same value in every column
  it had, type included (new tables, columns and rows may be added: migrations add them), except the
  columns a migration deliberately transforms (:data:`TRANSFORMED`, each with its reason);
- every file under ``VAR_DIR`` is unchanged byte for byte (new ones may appear: ``collectstatic``);
- the old reports', batches' and agreement pages answer 200 to their researcher (Django's test client), and
  the home page lists CHANGELOG.md's entries to them once.

The migrations are not listed: whatever this checkout adds is held to the same rule.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The last main before issue 67's work: the version a lab upgrades from.
OLD_MAIN = "3c7dd83b"

#: Columns whose values a migration deliberately transforms ((table, column) -> why); checked for their
#: rows' presence only.
TRANSFORMED: dict[tuple[str, str], str] = {
    ("annotation_answers_change", "token"): "SQLite's answers-change stamp is drawn anew at every migrate "
    "(annotation/crowd/services/change_log.py): counts kept under the old token are never read again; no figure",
    ("annotation_prolifichooksecret", "value"): "the webhook secret is sealed with the connections key "
    "(platforms/prolific/migrations/0002_hook_secret_sealed.py): its plaintext column gives way to `sealed`; "
    "tests/platforms/prolific/test_hook_secret_sealed.py checks the sealed secret still verifies deliveries",
}

#: Files under VAR_DIR that are the database itself, not a stored figure.
DATABASE_FILES = re.compile(r"^db\.sqlite3(-wal|-shm|-journal)?$")

DUMP = r"""
import hashlib, json, os, sys
from pathlib import Path
import django
django.setup()
from django.db import connection


def text(value):
    # The value as the database gives it, its type included (1, 1.0 and '1' differ)
    if value is None:
        return None
    if isinstance(value, memoryview):
        value = bytes(value)
    return f"{type(value).__name__}:{value!r}"


tables = {}
with connection.cursor() as cursor:
    quote = connection.ops.quote_name
    for table in sorted(connection.introspection.table_names(cursor)):
        columns = [column.name for column in connection.introspection.get_table_description(cursor, table)]
        key = connection.introspection.get_primary_key_columns(cursor, table) or columns
        cursor.execute(f"SELECT {', '.join(quote(c) for c in columns)} FROM {quote(table)}")
        rows = [[text(value) for value in row] for row in cursor.fetchall()]
        tables[table] = {"columns": columns, "key": key, "rows": rows}
files = {}
var = Path(os.environ["VAR_DIR"])
for path in sorted(var.rglob("*")):
    relative = path.relative_to(var)
    if path.is_file() and relative.parts[0] != "static":
        files[str(relative)] = hashlib.sha256(path.read_bytes()).hexdigest()
print(json.dumps({"tables": tables, "files": files}))
"""

PAGES = r"""
import json
import django
django.setup()
from django.contrib.auth import get_user_model
from django.test import Client
from django.test.utils import setup_test_environment
from django.urls import reverse
from annotation.models import Batch
from metrics.models import Report

setup_test_environment()
client = Client()
client.force_login(get_user_model().objects.get(username="demo"))
pages = [reverse("home")]
pages += [reverse("metrics:report-detail", args=[name]) for name in Report.objects.values_list("name", flat=True)]
for name in Batch.objects.values_list("name", flat=True):
    pages += [reverse("annotation:batch-detail", args=[name]), reverse("annotation:batch-agreement", args=[name])]
statuses = {page: client.get(page).status_code for page in pages}
# What changed since the researcher's last version (CHANGELOG.md), listed once on the home page
statuses["changelog notice"] = 'id="changelog-notice"' in client.get(reverse("home")).content.decode()
print(json.dumps(statuses))
"""


#: Every stored report built again with today's code on the same data (the reports made before the library
#: was moved out of the apps, against one made after): each result's figures, by run, metric, variant and cutoff.
REBUILD = r"""
import json, math
import django
django.setup()
from core.models import Job
from metrics.models import Report, Result
from metrics.services.reports import start_rebuild
from core import methods

FIGURES = [field.name for field in Result._meta.get_fields() if field.get_internal_type() == "FloatField"]
# What a method changed since moves (CHANGELOG.md, crowd_model 2026-11-26.2: each bootstrap refit of the crowd
# model stops by its own convergence): the label-corrected intervals and the p-values of their test, in their
# fourth decimal, never a point. Compared apart: within a thousandth of their value.
REFITTED = {"combined_low", "combined_high", "label_share", "difference_combined_low", "difference_combined_high",
            "difference_label_share", "p_value"}
ADDED_SINCE = {"EE", "GFR"}
old_reports = list(Report.objects.order_by("pk"))
compared, differing, refitted, by_method = 0, [], 0, 0
for old in old_reports:
    # A report whose label interval's method has changed since (CHANGELOG.md, label_interval checked) gets today's
    # interval when rebuilt: its label-interval figures are the new method's, not the old code's, so they are
    # not compared (the points and every other figure still are).
    moved = bool(old.label_batch_id) and (old.methods or {}).get("label_interval") != methods.CURRENT["label_interval"]
    job = start_rebuild(old)
    job.refresh_from_db()
    assert job.status == Job.Status.DONE, (old.name, job.status, job.error)
    new = Report.objects.get(name=job.result["report"])
    def figures(report):
        return {(r.run.name, r.metric, r.variant, r.cutoff): [getattr(r, f) for f in FIGURES]
                for r in Result.objects.filter(report=report).select_related("run")}
    before, after = figures(old), figures(new)
    # Measures added since (issue 83: EE, GFR, each one class): a rebuilt report computes them beside every old row.
    added = {key for key in set(after) - set(before) if key[1] not in ADDED_SINCE}
    if set(before) - set(after) or added:
        differing.append([old.name, "rows", sorted(map(str, (set(before) - set(after)) | added))[:5]])
        continue
    for key, values in before.items():
        for name, a, b in zip(FIGURES, values, after[key]):
            if moved and name in REFITTED:
                by_method += 1
                continue
            compared += 1
            tolerance = 1e-3 if name in REFITTED else 1e-12
            same = (a is None and b is None) or (a is not None and b is not None and (
                (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=tolerance, abs_tol=1e-15)))
            refitted += name in REFITTED and same and a is not None and a != b
            if not same:
                differing.append([old.name, list(map(str, key)), name, a, b])
print(json.dumps({"reports": len(old_reports), "compared": compared, "differing": differing[:20],
                  "refitted": refitted, "by_method": by_method}))
"""


def upgrade_commands() -> list[list[str]]:
    """The ``manage.py`` lines of docs/deployment.md's "Upgrading" section, as written there."""
    text = (ROOT / "docs" / "deployment.md").read_text()
    section = text.split("\n## Upgrading\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    assert "git pull" in block and "pip install -r requirements.txt" in block, block
    restarted = next(line for line in block.splitlines() if line.startswith("systemctl restart"))
    assert "genderbias-web" in restarted and "genderbias-worker@" in restarted, restarted
    commands = [shlex.split(line) for line in block.splitlines() if "manage.py" in line]
    assert [words[2] for words in commands] == ["migrate", "collectstatic"], commands
    return [words[1:] for words in commands]


def _old_tree(destination: Path) -> Path:
    git = shutil.which("git")
    if git is None:
        pytest.skip("no git on this machine: the earlier main is taken from the checkout's history")
    known = subprocess.run(
        [git, "-C", str(ROOT), "cat-file", "-e", f"{OLD_MAIN}^{{commit}}"], capture_output=True, check=False
    )
    if known.returncode != 0:
        pytest.skip(f"commit {OLD_MAIN} is not in this checkout's history (a shallow clone?): nothing to upgrade from")
    archive = subprocess.Popen([git, "-C", str(ROOT), "archive", OLD_MAIN], stdout=subprocess.PIPE)
    # The "data" filter (Python 3.11.4 and later) where there is one; Debian 12's own Python 3.11 (3.11.2) has
    # none, and the archive is this checkout's own history.
    safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
    with tarfile.open(fileobj=archive.stdout, mode="r|") as tar:
        tar.extractall(destination, **safe)
    assert archive.wait() == 0
    return destination


def _run(tree: Path, environment: dict[str, str], *arguments: str) -> str:
    done = subprocess.run(
        [sys.executable, *arguments],
        cwd=tree,
        env={**environment, "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, f"{' '.join(arguments[:2])} in {tree}:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return done.stdout


def _dump(environment: dict[str, str]) -> dict:
    return json.loads(_run(ROOT, environment, "-c", DUMP).strip().splitlines()[-1])


#: The suite's PostgreSQL server when it runs on one (bin/test's PostgreSQL stage), else None.
SUITE_POSTGRES = (
    os.environ.get("DATABASE_URL", "") if os.environ.get("DATABASE_URL", "").startswith("postgres") else None
)


@pytest.fixture(params=[pytest.param("sqlite", marks=pytest.mark.embedded), "postgresql"])
def database_url(request, tmp_path):
    """A new, empty database of the parametrised kind (PostgreSQL: on the suite's server, dropped after)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'var' / 'db.sqlite3'}"
        return
    if SUITE_POSTGRES is None:
        pytest.skip("PostgreSQL: run by bin/test's PostgreSQL stage (DATABASE_URL=postgres://...)")
    import uuid

    import psycopg

    server, database = SUITE_POSTGRES.rsplit("/", 1)[0], f"upgrade_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{database}"')
    yield f"{server}/{database}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def _changed_rows(before: dict, after: dict) -> dict[str, list]:
    """Per table that existed before: its rows missing after, or with another value in an old column."""
    changed: dict[str, list] = {}
    for table, old in before["tables"].items():
        new = after["tables"].get(table)
        if new is None:
            changed[table] = ["the table is gone"]
            continue
        gone = [c for c in old["columns"] if c not in new["columns"] and (table, c) not in TRANSFORMED]
        if gone:
            changed[table] = [f"columns gone: {gone}"]
            continue
        key = [old["columns"].index(column) for column in old["key"]]
        compared = [column for column in old["columns"] if (table, column) not in TRANSFORMED]
        old_at = [old["columns"].index(column) for column in compared]
        new_at = [new["columns"].index(column) for column in compared]
        new_key = [new["columns"].index(column) for column in old["key"]]
        kept = {tuple(row[i] for i in new_key): [row[i] for i in new_at] for row in new["rows"]}
        for row in old["rows"]:
            found = kept.get(tuple(row[i] for i in key))
            values = [row[i] for i in old_at]
            if found != values:
                changed.setdefault(table, []).append(
                    {"before": dict(zip(compared, values, strict=True)), "after": found}
                )
    return changed


@pytest.mark.slow
def test_an_earlier_mains_demo_database_upgrades_as_the_docs_say_keeping_every_row_and_figure(tmp_path, database_url):
    commands = upgrade_commands()
    old = _old_tree(tmp_path / "old")
    var = tmp_path / "var"
    var.mkdir()
    environment = {name: value for name, value in os.environ.items() if name not in {"CELERY_BROKER_URL", "PYTHONPATH"}}
    # What bin/demo sets: a local try-out with debug on
    environment.update(
        {
            "VAR_DIR": str(var),
            "DATABASE_URL": database_url,
            "DJANGO_DEBUG": "1",
            "DJANGO_SETTINGS_MODULE": "config.settings",
        }
    )
    _run(old, environment, "manage.py", "migrate", "--noinput", "-v0")
    _run(old, environment, "manage.py", "demo")
    before = _dump(environment)

    for arguments in commands:
        _run(ROOT, environment, *arguments)
    after = _dump(environment)

    rows = sum(len(table["rows"]) for table in before["tables"].values())
    figures = {name: digest for name, digest in before["files"].items() if not DATABASE_FILES.match(name)}
    print(f"compared {len(before['tables'])} tables, {rows} rows, {len(figures)} files under VAR_DIR")
    assert rows > 1000 and len(figures) > 20, (rows, figures)  # the demo made them: a report, a batch, a paper
    assert _changed_rows(before, after) == {}
    assert {name: after["files"].get(name) for name in figures} == figures

    pages = json.loads(_run(ROOT, environment, "-c", PAGES).strip().splitlines()[-1])
    assert sum("/metrics/" in page for page in pages) >= 2 and sum("/agreement/" in page for page in pages) >= 1
    assert pages.pop("changelog notice") is True
    assert {page: status for page, status in pages.items() if status != 200} == {}

    # The old reports' figures, computed again by today's code on the same data (inline: the job runs in
    # the script), are the figures the old code stored: moving the computations into the library moved none
    rebuilt = json.loads(
        _run(ROOT, environment | {"JOB_LOCAL_RUNNER": "inline"}, "-c", REBUILD).strip().splitlines()[-1]
    )
    print(
        f"rebuilt {rebuilt['reports']} reports, {rebuilt['compared']} figures compared, {rebuilt['refitted']} moved, "
        f"{rebuilt['by_method']} label-interval figures of a method changed since left out"
    )
    assert rebuilt["reports"] >= 2 and rebuilt["compared"] > 100, rebuilt
    assert rebuilt["differing"] == [], rebuilt["differing"]

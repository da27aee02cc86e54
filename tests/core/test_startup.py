"""Start-up stays light: loading the apps and the URLconf imports no heavy library.

Heavy libraries are imported where they are used (services' functions, pure modules),
so web workers, Celery workers and commands start as fast as Django itself. This is a
module-presence check in a fresh interpreter, not a timing.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[2]
HEAVY = [
    "scipy",
    "matplotlib",
    "polars",
    "pyarrow",
    "boto3",
    "botocore",
    "pandas",
    "numpy",
    "krippendorff",
    "tqdm",
    "ir_measures",
    "ir_datasets",
    "pytrec_eval",
    "sklearn",
    "ppi_py",
]

PROBE = """
import importlib, json, os, sys
import django
django.setup()
from django.urls import get_resolver

def walk(patterns):
    for p in patterns:
        if hasattr(p, "url_patterns"):
            walk(p.url_patterns)
        else:
            p.callback
walk(get_resolver().url_patterns)
for app in ("core", "pooling", "annotation", "metrics"):
    for module in ("admin", "api", "serializers", "forms", "views", "models", "services", "selectors"):
        try:
            importlib.import_module(f"{app}.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{app}.{module}":
                raise
print(json.dumps(sorted(m for m in HEAVY if m in sys.modules)))
"""


def test_loading_apps_and_urls_imports_no_heavy_library():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONPATH": str(ROOT)}
    probe = f"HEAVY = {HEAVY!r}\n" + PROBE
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_every_system_check_passes_including_the_ones_commands_leave_out(capsys):
    """Commands skip the web checks (core.management.cli.ProjectCommand); the suite runs them all."""
    call_command("check", fail_level="WARNING")
    assert "no issues" in capsys.readouterr().out


COMMAND_PROBE = """
import importlib, json, pkgutil, sys
import django
django.setup()
for app in ("pooling", "annotation", "metrics"):
    importlib.import_module(f"{app}.services")
for app in ("core", "pooling", "annotation", "metrics"):
    commands = importlib.import_module(f"{app}.management.commands")
    for info in pkgutil.iter_modules(commands.__path__):
        if info.name == "sweep_jobs":  # its whole work is sending tasks
            continue
        importlib.import_module(f"{app}.management.commands.{info.name}")
print(json.dumps(sorted(m for m in ("celery", "kombu") if m in sys.modules)))
"""


@pytest.mark.slow
def test_commands_and_services_load_celery_only_when_a_task_is_sent():
    """Celery costs ~0.1 s to import; a command that starts no job (most of them) must not pay it."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", COMMAND_PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


TASKS_PROBE = """
import django
django.setup()
import core.tasks, pooling.tasks
print(*(core.tasks.task_for(kind).app.main for kind in ("annotation.publish", "report")),
      pooling.tasks.count_scan_chunk_task.app.main)
"""


def test_every_apps_tasks_are_bound_to_the_projects_celery_app_whichever_loads_first():
    """A web worker may load one app's tasks before any other: they must still use the
    project's Celery app (its broker, or eager without one), not Celery's default app."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", TASKS_PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["genderbias"] * 3


EVERY_COMMAND_PROBE = """
import importlib, json, pkgutil, sys
import django
django.setup()
loaded = {}
before = {m for m in HEAVY if m in sys.modules}
for app in ("core", "pooling", "annotation", "metrics"):
    commands = importlib.import_module(f"{app}.management.commands")
    for info in pkgutil.iter_modules(commands.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{app}.management.commands.{info.name}")
        module.Command().create_parser("manage.py", info.name)  # what `manage.py NAME --help` builds
        loaded[info.name] = sorted(m for m in HEAVY if m in sys.modules and m not in before)
        before = {m for m in HEAVY if m in sys.modules}
print(json.dumps(loaded))
"""


@pytest.mark.slow
def test_no_command_loads_a_heavy_library_to_start():
    """Every command of the product (not the benchmarks), imported and its parser built as
    ``manage.py NAME --help`` does, in one interpreter: no heavy library is loaded by then.
    Each is imported inside the function that uses it (readers, plots, tables), so a small
    command starts within a few tens of ms of ``manage.py help`` (docs/benchmarks.md, "Start-up")."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONPATH": str(ROOT)}
    probe = f"HEAVY = {HEAVY!r}\n" + EVERY_COMMAND_PROBE
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(loaded) > 30  # every command was reached
    assert {name: heavy for name, heavy in loaded.items() if heavy} == {}

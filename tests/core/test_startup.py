"""Start-up stays light: loading the apps and the URLconf imports no heavy library.

Heavy libraries (the one list: ``core.startup.HEAVY_MODULES``) are imported where they are
used (services' functions, pure modules), so web workers, Celery workers and commands start
as fast as Django itself. These are module-presence checks in a fresh interpreter, not timings.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from core.startup import HEAVY_MODULES

ROOT = Path(__file__).resolve().parents[2]

SETUP_PROBE = """
import importlib.util, json, sys
from core.startup import HEAVY_MODULES, heavy_modules_loaded
missing = [name for name in HEAVY_MODULES if importlib.util.find_spec(name) is None]
import django
django.setup()
print(json.dumps({"heavy": heavy_modules_loaded(), "missing": missing, "modules": sorted(sys.modules)}))
"""


def _probe(code: str, **variables: str) -> dict | list:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONPATH": str(ROOT), **variables}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_django_setup_imports_no_heavy_library():
    """What every command and worker pays before its own work: the settings, the apps' models,
    admin modules and ``ready``. The list's names are real packages of the environment (a
    misspelt name would pass for ever), and a module of the list imported at setup fails it."""
    loaded = _probe(SETUP_PROBE)
    assert loaded["missing"] == []
    assert loaded["heavy"] == []
    assert "django" in loaded["modules"] and "annotation.models" in loaded["modules"]  # the probe did set up


def test_the_check_sees_a_heavy_library_imported_at_setup(tmp_path):
    """The probe itself: a settings module that imports one of the listed libraries is caught."""
    (tmp_path / "heavy_settings.py").write_text(
        "from config.settings import *  # noqa: F403\nimport numpy  # noqa: F401\n"
    )
    loaded = _probe(SETUP_PROBE, DJANGO_SETTINGS_MODULE="heavy_settings", PYTHONPATH=f"{ROOT}:{tmp_path}")
    assert loaded["heavy"] == ["numpy"]


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
from core.startup import heavy_modules_loaded
print(json.dumps(heavy_modules_loaded()))
"""


def test_loading_apps_and_urls_imports_no_heavy_library():
    assert _probe(PROBE) == []


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
    probe = f"HEAVY = {HEAVY_MODULES!r}\n" + EVERY_COMMAND_PROBE
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(loaded) > 30  # every command was reached
    assert {name: heavy for name, heavy in loaded.items() if heavy} == {}


def test_setup_runs_without_the_collector_and_freezes_what_it_loaded():
    """``frozen_after`` (what ``manage.py`` wraps ``django.setup`` with): no collection while the apps
    load, and what they made is out of every later pass (``gc.freeze``); the collector is on again after."""
    import gc

    from core.startup import frozen_after

    seen = {}

    def setup() -> None:
        seen["collector"] = gc.isenabled()
        seen["made"] = [[] for _ in range(1_000)]

    before = gc.get_freeze_count()
    try:
        frozen_after(setup)()
        assert seen["collector"] is False and gc.isenabled()
        assert gc.get_freeze_count() >= before + 1_000
    finally:
        gc.unfreeze()


def test_manage_py_freezes_what_django_setup_loaded():
    """The wiring: a command started by ``manage.py`` finds the apps' objects frozen and the collector on."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", "import gc; print(gc.isenabled(), gc.get_freeze_count())"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    enabled, frozen = done.stdout.splitlines()[-1].split()
    assert enabled == "True" and int(frozen) > 10_000  # the apps' modules, models and settings


@pytest.mark.parametrize("operator", [None, "dirty_decay_ms:0"])
def test_polars_allocator_keeps_freed_pages_unless_the_operator_says_otherwise(operator):
    """A command's process (``manage.py`` runs ``keep_freed_memory`` before polars loads) starts polars'
    jemalloc with freed pages kept 10 s for reuse; an operator's own ``_RJEM_MALLOC_CONF`` is left as given."""
    env = {key: value for key, value in os.environ.items() if key != "_RJEM_MALLOC_CONF"}
    if operator:
        env["_RJEM_MALLOC_CONF"] = operator
    code = "import os; from core.startup import keep_freed_memory; keep_freed_memory(); print(os.environ['_RJEM_MALLOC_CONF'])"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == (operator or "dirty_decay_ms:10000,muzzy_decay_ms:0"), done.stderr


_MAPPED_BYTES_AFTER_A_LARGE_BLOCK = """
import ctypes, sys
from core.startup import keep_freed_memory
if sys.argv[1] == "kept":
    keep_freed_memory()
class Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Mallinfo2
block = bytearray(64 * 1024 * 1024)  # one malloc of 64 MiB, over glibc's largest mapping threshold
print(libc.mallinfo2().hblkhd)
"""


@pytest.mark.parametrize(
    ("mode", "operator", "mapped"),
    [("kept", None, False), ("default", None, True), ("kept", "65536", True)],
    ids=["a command keeps it on the heap", "glibc's default maps it", "the operator's setting wins"],
)
def test_a_commands_large_blocks_come_from_glibcs_heap(mode, operator, mapped):
    """glibc's own accounting (``mallinfo2``: bytes in mapped blocks) of a 64 MiB block: mapped on its own by
    default, taken from the heap once ``keep_freed_memory`` ran (as ``manage.py`` runs it), unless the
    operator set ``MALLOC_MMAP_MAX_``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("MALLOC_")}
    if operator:
        env["MALLOC_MMAP_MAX_"] = operator
    done = subprocess.run(
        [sys.executable, "-c", _MAPPED_BYTES_AFTER_A_LARGE_BLOCK, mode],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (int(done.stdout) >= 64 * 1024 * 1024) == mapped, done.stderr

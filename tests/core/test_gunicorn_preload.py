"""The gunicorn master imports every heavy library a page may import, before the workers fork; a Celery
worker's main process imports the same before its pool forks."""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Libraries whose import costs a worker's first view noticeable time (numpy-and-up).
HEAVY = (
    "numpy",
    "pandas",
    "polars",
    "pyarrow",
    "scipy",
    "krippendorff",
    "matplotlib",
    "ppi_py",
    "sklearn",
    "ir_measures",
)
#: Product code that never runs in a web worker.
NOT_SERVED = ("benchmarks", "management", "migrations")


def _heavy_imports() -> dict[str, str]:
    """Module -> a file of the site that imports it (functions' imports included)."""
    found = {}
    for app in ("core", "pooling", "annotation", "metrics"):
        for path in (ROOT / app).rglob("*.py"):
            if any(part in NOT_SERVED for part in path.relative_to(ROOT).parts):
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                names = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module]
                for name in names:
                    if name.split(".")[0] in HEAVY:
                        found.setdefault(name, str(path.relative_to(ROOT)))
    return found


def _in_a_fresh_interpreter(script: str, debug: bool = True):
    """What ``script`` (Django's settings, debug on or off) printed last, read as JSON."""
    env = os.environ | {"DJANGO_SETTINGS_MODULE": "config.settings", "DJANGO_DEBUG": "1" if debug else "0"}
    if not debug:
        env.setdefault("DJANGO_SECRET_KEY", "x" * 60)
        env.setdefault("WORKER_PSEUDONYM_KEY", "y" * 60)
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=120
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_master_has_imported_every_heavy_module_the_site_imports():
    """In a fresh interpreter: Django set up, then gunicorn's ``when_ready`` as the master runs it."""
    script = (
        "import django, gc, json, sys; django.setup(); from config import gunicorn; gunicorn.when_ready(None); "
        "print(json.dumps([sorted(sys.modules), gc.get_freeze_count(), len(gc.get_objects())]))"
    )
    modules, frozen, walked = _in_a_fresh_interpreter(script)
    loaded = set(modules)
    missing = {name: where for name, where in _heavy_imports().items() if name not in loaded}
    assert not missing, f"add to config.gunicorn.PRELOADED: {missing}"
    # What the master loaded is frozen before the workers fork: a worker's full collection walks only what the
    # worker made since (here: the few objects the printing made), not the 360,000 the master loaded.
    assert frozen > 100_000 and walked < frozen / 100, (frozen, walked)


@pytest.mark.slow
def test_the_master_compiles_the_sites_templates_once_for_every_worker():
    """In a fresh interpreter with DEBUG off (the cached loader, as served): after ``when_ready`` the
    pages' templates are compiled and kept, so a new worker's first view compiles none."""
    script = (
        "import django, json; django.setup(); from config import gunicorn; gunicorn.when_ready(None); "
        "from django.template import engines; loader = engines['django'].engine.template_loaders[0]; "
        "print(json.dumps([type(loader).__name__, sorted(loader.get_template_cache)]))"
    )
    kind, kept = _in_a_fresh_interpreter(script, debug=False)
    assert kind == "Loader"  # django.template.loaders.cached
    for page in ("annotation/prelabelling/calibration.html", "annotation/batch_agreement.html", "base.html"):
        assert page in kept


@pytest.mark.slow
def test_a_celery_worker_imports_the_heavy_libraries_before_its_pool_forks():
    """In a fresh interpreter: the Celery app loaded as ``celery -A config worker`` loads it, then the
    ``worker_init`` signal Celery sends in the worker's main process before the pool starts."""
    script = (
        "import django, json, sys; django.setup(); from config.celery import app; "
        "from config.gunicorn import PRELOADED; from celery.signals import worker_init; "
        "import gc; before = [n for n in PRELOADED if n in sys.modules]; worker_init.send(sender=None); "
        "print(json.dumps([before, [n for n in PRELOADED if n not in sys.modules], gc.get_freeze_count()]))"
    )
    before, missing, frozen = _in_a_fresh_interpreter(script)
    assert "ppi_py" not in before and "matplotlib.figure" not in before  # loaded by the signal, not by the app
    assert missing == [] and frozen > 100_000  # and frozen before the pool forks

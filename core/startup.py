"""What a process may load to start: the one list of heavy libraries that setting Django up never imports.

``django.setup()`` (the settings, every app's models, admin and ``ready``), and with it every
command's start and every web worker's, imports none of :data:`HEAVY_MODULES`: each is imported
inside the function that uses it (readers, counts, plots, tables, clients), so ``manage.py help``
and a small command start within a few tens of ms of a bare Django project with the same
framework apps (docs/benchmarks.md, "Start-up"). ``tests/core/test_startup.py`` checks it in a
fresh interpreter; ``benchmark_startup`` names any that a measured command loaded.

Pure: standard library only.
"""

from __future__ import annotations

import sys
from collections.abc import Collection

#: Libraries that cost a process tens to hundreds of ms (or a thread pool, or a JIT) to import:
#: never at start-up, only where used. One name a top-level package.
HEAVY_MODULES = (
    "numpy",
    "pandas",
    "polars",
    "pyarrow",
    "scipy",
    "matplotlib",
    "sklearn",
    "statsmodels",
    "krippendorff",
    "ppi_py",
    "numba",
    "boto3",
    "botocore",
    "tqdm",
    "ir_measures",
    "ir_datasets",
    "pytrec_eval",
    "crowdkit",
    "huggingface_hub",
    "celery",
    "kombu",
)


def heavy_modules_loaded(modules: Collection[str] | None = None) -> list[str]:
    """The names of :data:`HEAVY_MODULES` among ``modules`` (this process's ``sys.modules`` by default), sorted."""
    loaded = sys.modules if modules is None else modules
    return sorted(name for name in HEAVY_MODULES if name in loaded)

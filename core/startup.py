"""What a process may load to start: the one list of heavy libraries that setting Django up never imports.

``django.setup()``, and so every command's and web worker's start, imports none of
:data:`HEAVY_MODULES`: each is imported inside the function that uses it, so a small command starts
about as fast as a bare Django project (docs/benchmarks.md, "Start-up"). ``tests/core/test_startup.py``
checks it; ``benchmark_startup`` names any a measured command loaded. Pure: standard library only.
"""

from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Callable, Collection
from typing import Any

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


def deferred(path: str) -> Callable[..., Any]:
    """The function at ``path`` (``package.module.name``), imported at its first call: what an app's
    ``ready`` registers without loading its module into every process's start."""
    module_name, _, name = path.rpartition(".")
    found: list[Callable[..., Any]] = []

    def call(*args: Any, **kwargs: Any) -> Any:
        if not found:
            found.append(getattr(importlib.import_module(module_name), name))
        return found[0](*args, **kwargs)

    call.__name__ = name
    call.__qualname__ = call.__doc__ = path
    return call


def frozen_after(setup: Callable[..., None]) -> Callable[..., None]:
    """``setup`` (``django.setup``) run with the cyclic collector paused, then what it loaded, which lives
    as long as the process, frozen out of every later collection (``gc.freeze``; docs/benchmarks.md,
    "Start-up"). ``manage.py`` wraps Django's with it."""

    def frozen_setup(*args: Any, **kwargs: Any) -> None:
        enabled = gc.isenabled()
        gc.disable()
        try:
            setup(*args, **kwargs)
        finally:
            gc.freeze()
            if enabled:
                gc.enable()

    return frozen_setup


#: glibc's ``mallopt`` parameters (``malloc.h``).
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4


def keep_freed_memory() -> None:
    """A command's process keeps the memory it frees for its next large arrays, instead of taking zeroed
    pages from the kernel again for each (docs/benchmarks.md, the full-size ``import_run``): polars'
    jemalloc keeps freed pages 10 s (before polars loads), glibc's malloc serves large blocks from its
    heap and keeps up to 1 GiB freed. Commands only: long-lived processes keep the defaults. An
    operator's own ``_RJEM_MALLOC_CONF``, ``MALLOC_MMAP_MAX_`` or ``MALLOC_TRIM_THRESHOLD_`` wins.
    """
    import ctypes
    import os

    os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:10000,muzzy_decay_ms:0")
    if "MALLOC_MMAP_MAX_" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ:
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_MMAP_MAX, 0)
    mallopt(_M_TRIM_THRESHOLD, 1 << 30)

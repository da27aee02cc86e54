"""gunicorn's settings for the site: ``gunicorn -c python:config.gunicorn config.wsgi``.

Threaded workers (``gthread``): a request waiting on the database holds a thread, not a
process. The application and its URLconf (every view and what it imports) are loaded once
in the master before the workers fork (``preload_app`` and :func:`when_ready`), with the heavy
libraries the researchers' pages use (:data:`PRELOADED`), so a new or restarted worker answers
its first request at once and the workers share that memory.
No database connection is opened before the fork.

Environment: ``GUNICORN_BIND`` (default ``127.0.0.1:8000``), ``GUNICORN_WORKERS``
(2 x cores + 1), ``GUNICORN_THREADS`` (4), ``GUNICORN_TIMEOUT`` (60 s).
"""

import os

bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", 2 * (os.cpu_count() or 1) + 1))
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
worker_class = "gthread"
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
graceful_timeout = 30
keepalive = 5
backlog = 2048
preload_app = True
errorlog = "-"


#: The heavy libraries the researchers' pages import on first use (each module imports them inside
#: the function that needs them, so commands start fast). Imported once in the master, a worker's
#: first agreement, report or calibration view does not pay them (ppi_py alone loads numba and
#: llvmlite: about 1.2 s). ``tests/core/test_gunicorn_preload.py`` keeps the list complete.
PRELOADED = (
    "numpy",
    "pandas",
    "polars",
    "pyarrow.parquet",
    "scipy.stats",
    "krippendorff",
    "matplotlib.figure",
    "matplotlib.backends.backend_agg",
    "matplotlib.backends.backend_svg",
    "ppi_py",
    "sklearn.linear_model",
    "sklearn.feature_extraction.text",
    "sklearn.model_selection",
    "sklearn.pipeline",
    "ir_measures",
)


def when_ready(server) -> None:
    """Import the URLconf and the heavy libraries in the master (after the application, before any worker forks)."""
    import importlib

    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018  (the import is the point)
    for name in PRELOADED:
        importlib.import_module(name)

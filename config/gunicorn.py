"""gunicorn's settings for the site: ``gunicorn -c python:config.gunicorn config.wsgi``.

Threaded workers (``gthread``): a request waiting on the database holds a thread, not a process.
The application, its URLconf, the heavy libraries (:data:`PRELOADED`) and the templates are loaded
once in the master before the workers fork (:func:`when_ready`), so a new worker answers at once
and the workers share that memory (docs/deployment.md, "systemd units"). No database connection
is opened before the fork.

Environment: ``GUNICORN_BIND`` (default ``127.0.0.1:8000``), ``GUNICORN_WORKERS``
(2 x cores + 1), ``GUNICORN_THREADS`` (4), ``GUNICORN_TIMEOUT`` (60 s), ``GUNICORN_CONTROL_SOCKET``
(default ``VAR_DIR/gunicorn.ctl``, the site's own; ``off``: none).
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

#: gunicorn's control socket (``gunicornc``), the site's own: gunicorn's default path is one per account,
#: shared by every site it serves, so one site's ``gunicornc`` could reach another's.
_control = os.environ.get("GUNICORN_CONTROL_SOCKET", "").strip()
_var_dir = os.environ.get("VAR_DIR") or os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "var")
if _control.lower() in ("off", "none", "0", "no"):
    control_socket_disable = True
else:
    control_socket = _control or os.path.join(os.path.abspath(_var_dir), "gunicorn.ctl")
control_socket_mode = 0o600


#: The heavy libraries the researchers' pages import on first use, imported once in the master (and
#: a Celery worker's main process) so a worker's first view does not pay them.
#: ``tests/core/test_gunicorn_preload.py`` keeps the list complete.
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
    "matplotlib.backends.backend_pdf",  # the paper bundle's figures
    "ppi_py",
    "sklearn.linear_model",
    "sklearn.feature_extraction.text",
    "sklearn.model_selection",
    "sklearn.pipeline",
    "ir_measures",
)


def when_ready(server) -> None:
    """Import the URLconf and the heavy libraries in the master, compile the templates, then freeze what is
    loaded out of the cyclic collector's passes, as Python advises before a fork (docs/deployment.md)."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018  (the import is the point)
    preload_and_freeze(compile_templates)


def preload_and_freeze(*also) -> None:
    """Import :data:`PRELOADED`, run ``also`` (more to load), then freeze everything loaded out of the cyclic
    collector's passes: what a process does before it forks workers."""
    import gc
    import importlib

    for name in PRELOADED:
        importlib.import_module(name)
    for load in also:
        load()
    gc.collect()
    gc.freeze()


def compile_templates() -> int:
    """Compile every template of the site's ``templates/`` folder once, in the master (the workers inherit
    the cached loader's templates), and load its language's number formats; returns how many."""
    from pathlib import Path

    from django.conf import settings
    from django.template import TemplateDoesNotExist, TemplateSyntaxError
    from django.template.loader import get_template
    from django.utils import formats, translation

    folder = Path(settings.BASE_DIR) / "templates"
    compiled = 0
    for path in sorted(folder.rglob("*.html")):
        try:
            get_template(path.relative_to(folder).as_posix())
        except (TemplateDoesNotExist, TemplateSyntaxError):  # a fragment that only works included
            continue
        compiled += 1
    with translation.override(settings.LANGUAGE_CODE):
        formats.number_format(0.5, 2)
    return compiled

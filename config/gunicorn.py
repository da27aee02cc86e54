"""gunicorn's settings for the site: ``gunicorn -c python:config.gunicorn config.wsgi``.

Threaded workers (``gthread``): a request waiting on the database holds a thread, not a
process. The application and its URLconf (every view and what it imports) are loaded once
in the master before the workers fork (``preload_app`` and :func:`when_ready`), so a new
or restarted worker answers its first request at once and the workers share that memory.
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


def when_ready(server) -> None:
    """Import the URLconf in the master (after the application, before any worker forks)."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018  (the import is the point)

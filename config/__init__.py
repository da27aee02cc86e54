"""Project settings package: settings, URLs, WSGI and the Celery app.

The Celery app (:mod:`config.celery`) is not imported here: it costs ~0.2 s, which
every command and web worker would pay. Task modules import it (``from config.celery
import app``), so it loads exactly when a task is defined, sent or run, and
``celery -A config worker`` finds it as ``config.celery``.
"""

import os

# polars' allocator (jemalloc, read at its first use) keeps freed pages 10 s for reuse, jemalloc's own
# default, where polars' build hands them back sooner: a command working through large frames one after
# another then reuses its memory instead of taking zeroed pages from the kernel again (measured in
# docs/benchmarks.md, "The study at its full size"). An operator's own setting wins.
os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:10000,muzzy_decay_ms:0")

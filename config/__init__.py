"""Project settings package: settings, URLs, WSGI and the Celery app.

The Celery app (:mod:`config.celery`) is not imported here: it costs ~0.2 s, which
every command and web worker would pay. Task modules import it (``from config.celery
import app``), so it loads exactly when a task is defined, sent or run, and
``celery -A config worker`` finds it as ``config.celery``.
"""

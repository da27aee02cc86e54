"""Celery app. Tasks are thin shells over services; without a broker jobs run in-process (core.jobs.in_process).

Celery's *current* app is per thread, and a thread that never made one falls back to an unconfigured
default app sending to amqp://localhost: this app is made the default for every thread, and every
task module loads it, so whoever sends or runs a task uses this configuration.
"""

import os

from celery import Celery
from celery.signals import worker_init

from config.gunicorn import preload_and_freeze

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("genderbias")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
app.set_default()


@worker_init.connect
def import_heavy_libraries(**_: object) -> None:
    """Import :data:`config.gunicorn.PRELOADED` in the worker's main process before the pool's children
    fork, then freeze it, as gunicorn's master does: a child's first job does not pay them
    (docs/benchmarks.md, the calibration job), and its collections walk only what it made."""
    preload_and_freeze()

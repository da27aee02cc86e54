"""Celery app. Tasks are thin shells over services; without a broker jobs run in-process (core.jobs.in_process).

Celery's *current* app is per thread: a thread that never created an app (a request
thread of runserver or gunicorn, a job thread) falls back to Celery's *default* app, an
unconfigured one that knows none of the tasks and sends to amqp://localhost. This app is
made the default for every thread, and every task module loads it (``core.tasks``
imports it), so whoever sends or runs a task uses this configuration.

A worker imports the heavy libraries in its main process before its pool forks
(:func:`import_heavy_libraries`), as gunicorn's master does for the pages.
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
    """Import :data:`config.gunicorn.PRELOADED` (the heavy libraries jobs and pages import on first use)
    in the worker's main process, before the pool's children fork: a child's first calibration report,
    report or pool job does not pay them, and the children share that memory. In a new process the
    calibration report's job spent about 3 of its 5 s of CPU importing them (docs/benchmarks.md). What
    is loaded is then frozen out of the cyclic collector's passes, as gunicorn's master does
    (:func:`config.gunicorn.when_ready`): a child's full collections walk only what it made."""
    preload_and_freeze()

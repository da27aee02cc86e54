"""Celery app. Tasks are thin shells over services; without a broker jobs run in-process (core.jobs.in_process).

Celery's *current* app is per thread: a thread that never created an app (a request
thread of runserver or gunicorn, a job thread) falls back to Celery's *default* app, an
unconfigured one that knows none of the tasks and sends to amqp://localhost. This app is
made the default for every thread, and every task module loads it (``core.tasks``
imports it), so whoever sends or runs a task uses this configuration.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("genderbias")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
app.set_default()

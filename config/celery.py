"""Celery app. Tasks are thin shells over services; without a broker they run eagerly."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("genderbias")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

"""Project settings package: settings, URLs, WSGI and the Celery app."""

from .celery import app as celery_app

__all__ = ("celery_app",)

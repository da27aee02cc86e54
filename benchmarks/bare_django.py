"""A bare Django project with the given framework apps, for ``benchmark_startup`` to measure beside this one.

What start-up costs beyond Django itself: this project's ``INSTALLED_APPS`` without its own apps, the same
database engine and options, and one app of its own with one model and a small ``import_queries PATH --name
NAME`` that stores a ``qid<TAB>query`` file's rows in one transaction (this project's, on a 10-line file).

Pure: writes files (standard library only); the project runs as its own ``manage.py`` processes.
"""

from __future__ import annotations

from pathlib import Path

_MANAGE = """\
import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bareproject.settings")
from django.core.management import execute_from_command_line

execute_from_command_line(sys.argv)
"""

_SETTINGS = """\
import os

SECRET_KEY = "bare-benchmark-only"
DEBUG = True
USE_TZ = True
INSTALLED_APPS = {apps!r} + ["bareapp"]
# The project's SQLite options (config/settings.py): WAL, no fsync per commit, IMMEDIATE.
DATABASES = {{
    "default": {{
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ["BARE_DATABASE"],
        "OPTIONS": {{
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }},
    }}
}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
ROOT_URLCONF = "bareproject.urls"
STATIC_URL = "static/"
TEMPLATES = [
    {{
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {{"context_processors": ["django.contrib.auth.context_processors.auth",
                                            "django.contrib.messages.context_processors.messages",
                                            "django.template.context_processors.request"]}},
    }}
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "axes.middleware.AxesMiddleware",
]
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
"""

_MODELS = """\
from django.db import models


class QuerySet(models.Model):
    name = models.CharField(max_length=200, unique=True)


class Query(models.Model):
    query_set = models.ForeignKey(QuerySet, on_delete=models.CASCADE)
    qid = models.CharField(max_length=100)
    text = models.TextField()
"""

_COMMAND = """\
from django.core.management.base import BaseCommand
from django.db import transaction

from bareapp.models import Query, QuerySet


class Command(BaseCommand):
    help = "Store a qid<TAB>query file's rows as a named query set."

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--name", required=True)

    def handle(self, path, name, **options):
        with open(path, encoding="utf-8") as file:
            rows = [line.rstrip("\\n").split("\\t", 1) for line in file if line.strip()]
        with transaction.atomic():
            query_set = QuerySet.objects.create(name=name)
            Query.objects.bulk_create(Query(query_set=query_set, qid=q, text=t) for q, t in rows)
"""

_MIGRATION = """\
from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True
    dependencies = []
    operations = [
        migrations.CreateModel(
            name="QuerySet",
            fields=[
                ("id", models.BigAutoField(primary_key=True)),
                ("name", models.CharField(max_length=200, unique=True)),
            ],
        ),
        migrations.CreateModel(
            name="Query",
            fields=[
                ("id", models.BigAutoField(primary_key=True)),
                ("qid", models.CharField(max_length=100)),
                ("text", models.TextField()),
                ("query_set", models.ForeignKey(on_delete=models.deletion.CASCADE, to="bareapp.queryset")),
            ],
        ),
    ]
"""


def write_bare_project(folder: Path, apps: list[str]) -> Path:
    """Write the bare project into ``folder`` (its ``manage.py`` beside ``bareproject/`` and
    ``bareapp/``); returns ``folder``. Its database is the file named by ``BARE_DATABASE``."""
    files = {
        "manage.py": _MANAGE,
        "bareproject/__init__.py": "",
        "bareproject/settings.py": _SETTINGS.format(apps=list(apps)),
        "bareproject/urls.py": "urlpatterns = []\n",
        "bareapp/__init__.py": "",
        "bareapp/models.py": _MODELS,
        "bareapp/migrations/__init__.py": "",
        "bareapp/migrations/0001_initial.py": _MIGRATION,
        "bareapp/management/__init__.py": "",
        "bareapp/management/commands/__init__.py": "",
        "bareapp/management/commands/import_queries.py": _COMMAND,
    }
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder

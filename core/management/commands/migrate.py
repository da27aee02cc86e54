"""Django's ``migrate``, with the system checks every project command runs (not the web site's).

Django's ``migrate`` runs every system check first; the URL, template, admin and REST
framework checks import every view and the API schema, about 0.4 s of a ``migrate`` on a new
database that otherwise takes well under a second (docs/benchmarks.md, "Start-up"). Like the
project's own commands (``core.management.cli.ProjectCommand``), it runs the checks of what it
uses: models, database, caches, files, signals. ``manage.py check``, ``runserver``, the web
workers and the test suite still run them all; ``--skip-checks`` still skips them.
"""

from django.core.management.commands.migrate import Command as DjangoMigrate

from core.management.cli import ProjectCommand


class Command(DjangoMigrate):
    def check(self, app_configs=None, tags=None, **kwargs):
        return super().check(app_configs=app_configs, tags=tags or ProjectCommand.requires_system_checks, **kwargs)

"""Command-line helpers: clean errors (no traceback), import summaries, one base command.

Every command of the project derives from :class:`ProjectCommand`, which runs the system
checks of what a command uses (models, database, caches, files, signals) and leaves out
those of the web site: URLs, templates, admin and REST framework compatibility import
every view, template-tag library, DRF and the API schema (about 0.4 s), which a command
reading a ten-line file should not pay. ``manage.py check``, ``runserver``, the web
workers and the test suite (tests/core/test_startup.py) still run them all.
"""

from collections.abc import Iterator
from contextlib import contextmanager

from django.core.checks import Tags
from django.core.management.base import BaseCommand, CommandError

from .errors import InputError, ServiceError


class ProjectCommand(BaseCommand):
    """Base of the project's commands: the system checks of what a command uses (see the module docstring)."""

    requires_system_checks = [
        Tags.models,
        Tags.database,
        Tags.commands,
        Tags.caches,
        Tags.files,
        Tags.signals,
        Tags.async_support,
        Tags.translation,
    ]


@contextmanager
def command_errors(*also: type[Exception]) -> Iterator[None]:
    """Bad input, refused requests, unwritable files (and ``also``) become ``CommandError``."""
    try:
        yield
    except (InputError, ServiceError, OSError, *also) as exc:
        raise CommandError(str(exc)) from None


def report_import(command, result, what: str) -> None:
    """Print what an import did, and any bad lines it was told to skip."""
    if result.skipped:
        command.stderr.write(result.skipped.summary())
    verb = "Imported" if result.created else "Already imported (unchanged)"
    command.stdout.write(command.style.SUCCESS(f"{verb}: {what}"))

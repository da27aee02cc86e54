"""Turning the services' errors into clean command-line errors (no traceback)."""

from collections.abc import Iterator
from contextlib import contextmanager

from django.core.management.base import CommandError

from ..readers import InputError
from ..services import ServiceError


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

"""Command-line helpers: clean errors (no traceback), import summaries, one base command.

Every command derives from :class:`ProjectCommand`, which runs the system checks of what a command
uses and leaves out the web site's (URLs, templates, admin, REST framework), which import every view:
a command reading a ten-line file should not pay that (docs/benchmarks-history.md). ``manage.py
check``, the web workers and the test suite still run them all.
"""

import argparse
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from typing import Any

from django.core.checks import Tags
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError
from django.db.models import Model, QuerySet

from core.db.scope import acting_in
from core.errors import FieldError, ServiceError
from core.jobs.in_process import inline_jobs
from core.models import ResearchGroup, group_id_by_slug
from core.options import ReportOption
from genderbias.errors import InputError
from genderbias.numbers import NumberError, parse_count, parse_decimal
from genderbias.ranking.defaults import OptionError


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

    def create_parser(self, prog_name, subcommand, **kwargs):
        """Every project command takes ``--group``: the research group it reads and creates in."""
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.add_argument(
            "--group",
            metavar="SLUG",
            help="research group (its slug) whose studies the command sees and where what it makes goes; "
            "default: every group is seen, and new objects go to the site's only group",
        )
        return parser

    def execute(self, *args, **options):
        """Jobs the command starts run inline (it reports their outcome, then exits); on a database not
        migrated, the database's own error becomes a message saying what to do (:func:`_unmigrated`)."""
        slug = options.pop("group", None)
        try:
            with inline_jobs(), acting_in(_group_id(slug) if slug else None, only=True):
                return super().execute(*args, **options)
        except DatabaseError as exc:
            message = _unmigrated(exc)
            if message is None:
                raise
            raise CommandError(message) from None


def _unmigrated(exc: DatabaseError) -> str | None:
    """What to tell a user whose command failed with ``exc`` on a database with migrations not applied,
    or None when every migration is applied (another error, raised as it is)."""
    from django.db import DEFAULT_DB_ALIAS, connections
    from django.db.migrations.executor import MigrationExecutor

    connection = connections[DEFAULT_DB_ALIAS]
    try:
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError:
        return None
    if not pending:
        return None
    name = connection.settings_dict.get("NAME")
    state = "has no tables yet" if not executor.loader.applied_migrations else "is of an earlier version"
    return (
        f"the database {name} {state} ({len(pending)} migrations not applied; the database said: "
        f"{str(exc).splitlines()[0]}): run `python manage.py migrate` first"
    )


def _group_id(slug: str) -> int:
    group = group_id_by_slug(slug)
    if group is None:
        known = ", ".join(ResearchGroup.objects.values_list("slug", flat=True)) or "none"
        raise CommandError(f"--group: no research group {slug!r} (known: {known})")
    return group


@contextmanager
def command_errors(*also: type[Exception], flags: Mapping[str, str] | None = None) -> Iterator[None]:
    """Bad input, refused requests, unwritable files (and ``also``) become ``CommandError``; a
    :class:`~core.errors.FieldError` names the option (the field with dashes, or ``flags[field]``).
    """
    try:
        yield
    except FieldError as exc:
        flag = (flags or {}).get(exc.field) or "--" + exc.field.replace("_", "-")
        raise CommandError(_with_notes(f"{flag}: {exc.problem}", exc)) from None
    except (InputError, ServiceError, OSError, *also) as exc:
        raise CommandError(_with_notes(str(exc), exc)) from None


def _with_notes(message: str, exc: BaseException) -> str:
    """The message and the notes the service added on the way up (``add_note``)."""
    return "; ".join([message, *getattr(exc, "__notes__", ())])


def imported_parts(found) -> str:
    """What an import of several parts made (``collection``, ``query_set``, ``qrels``, any None), one phrase
    each with its size."""
    parts = []
    if found.collection is not None:
        passages = found.collection.passages
        if found.collection.by_reference:  # not read: what its metadata says, never lines read
            known = f"{passages:,} passages known from its metadata" if passages is not None else "passages"
            size = f"by reference: {known}, read by id as pools and reports ask"
        else:
            size = f"{passages:,} passages"
        parts.append(f"collection {found.collection.name!r} ({size})")
    if found.query_set is not None:
        parts.append(f"query set {found.query_set.name!r} ({found.query_set.queries.count():,} queries)")
    if found.qrels is not None:
        parts.append(f"qrels {found.qrels.name!r} ({found.qrels.judgments:,} judgments)")
    return ", ".join(parts)


def report_import(command, result, what: str) -> None:
    """Print what an import did, and any bad lines it was told to skip."""
    if result.skipped:
        command.stderr.write(result.skipped.summary())
    verb = "Imported" if result.created else "Already imported (unchanged)"
    command.stdout.write(command.style.SUCCESS(f"{verb}: {what}"))


def name_list(text: str) -> list[str]:
    """``"a, b,,a"`` -> ``["a", "b"]``: comma-separated names, in order, without repeats."""
    return list(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))


def get_named(model: type[Model] | QuerySet, name: str, what: str) -> Model:
    """The object of ``model`` (or of a queryset, e.g. another app's selector) named ``name``,
    or a CommandError listing some known names."""
    objects = model if isinstance(model, QuerySet) else model._default_manager.all()
    try:
        return objects.get(name=name)
    except objects.model.DoesNotExist:
        known = ", ".join(objects.values_list("name", flat=True)[:10]) or "none yet"
        raise CommandError(f"no {what} named {name!r} (known: {known})") from None


def get_named_list(model: type[Model], names: Iterable[str], what: str) -> list[Model]:
    """The objects named ``names``, in that order; one CommandError naming every unknown name."""
    names = list(dict.fromkeys(names))
    if not names:
        raise CommandError(f"give at least one {what}")
    found = {obj.name: obj for obj in model._default_manager.filter(name__in=names)}
    unknown = [name for name in names if name not in found]
    if unknown:
        raise CommandError(f"unknown {what}(s): {', '.join(unknown)}")
    return [found[name] for name in names]


def add_option(parser: argparse.ArgumentParser, option: ReportOption, flag: str = "") -> None:
    """Add a report setting to a command as ``--name-with-dashes`` (or ``flag``), read and checked by
    :meth:`~genderbias.ranking.defaults.Rule.parse`, so it refuses what the page and the API refuse."""
    flag = flag or "--" + option.name.replace("_", "-")
    if option.kind == "choice":
        parser.add_argument(flag, choices=option.values, default=option.default or None, help=option.describe())
    elif option.kind == "file":
        parser.add_argument(flag, default=None, help=option.describe(), metavar="FILE")
    else:
        read = _argument_type(option.parse, option.kind)  # argparse names the type in its message
        parser.add_argument(flag, type=read, default=option.default, help=option.describe().replace("%", "%%"))


def _argument_type(parse: Callable[[str], Any], name: str) -> Callable[[str], Any]:
    """An ``add_argument(type=...)`` reading with ``parse``, its refusal (``.problem``) argparse's message."""

    def read(text: str) -> Any:
        try:
            return parse(text)
        except (OptionError, NumberError) as exc:
            raise argparse.ArgumentTypeError(exc.problem) from None

    read.__name__ = name
    return read


#: ``add_argument(type=...)`` for a whole number, ASCII digits only (``type=int`` takes ``١٠`` and ``1_0``),
#: and for a number with a fraction (``type=float`` takes ``nan``, ``inf``, ``1e3`` and ``١.٥``); ranges are
#: the service's.
whole_number = _argument_type(partial(parse_count, field="value", maximum=10**18), "whole_number")
decimal_number = _argument_type(partial(parse_decimal, field="value"), "decimal_number")

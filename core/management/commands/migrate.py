"""Django's ``migrate``, with a new database made in one step and the checks a command needs.

- **A new database** (no table at all, no option asking for something else) is made from the
  migrations' end state in one transaction (``core.db.new_database``; docs/benchmarks-history.md,
  "A new database in one step"); ``--run-syncdb`` apps are synced first, as Django does. Any other
  database, a plan that must be replayed, or ``--replay``, is migrated as Django does.
- **The checks** are those of what a command uses (``core.management.cli.ProjectCommand``), not the
  web site's, which import every view; ``manage.py check`` and the test suite still run them all.
"""

from importlib import import_module

from django.apps import apps
from django.core.management.base import no_translations
from django.core.management.commands.migrate import Command as DjangoMigrate
from django.core.management.sql import emit_post_migrate_signal, emit_pre_migrate_signal
from django.db import connections
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.state import ProjectState
from django.utils.module_loading import module_has_submodule

from core.db.new_database import create_from_models, is_empty, new_database_plan
from core.management.cli import ProjectCommand

#: Options under which ``migrate`` does something other than make a new database at the leaves.
OTHER_WORK = ("app_label", "migration_name", "fake", "fake_initial", "plan", "check_unapplied", "prune", "replay")


class Command(DjangoMigrate):
    def check(self, app_configs=None, tags=None, **kwargs):
        return super().check(app_configs=app_configs, tags=tags or ProjectCommand.requires_system_checks, **kwargs)

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument(
            "--replay",
            action="store_true",
            help="apply every migration one by one even on a new database (by default a new database "
            "is made from the migrations' end state in one step and every migration recorded as applied)",
        )

    @no_translations
    def handle(self, *args, **options):
        if not any(options.get(name) for name in OTHER_WORK) and self._made_in_one_step(options):
            return
        super().handle(*args, **options)

    def _made_in_one_step(self, options) -> bool:
        """Make a new database in one step; False (nothing done) if it is not new or the plan needs replaying."""
        database = options["database"]
        connection = connections[database]
        connection.prepare_database()
        if not connection.features.can_rollback_ddl or not is_empty(connection):
            return False
        executor = MigrationExecutor(connection)
        if executor.loader.detect_conflicts():
            return False  # Django's migrate says which
        plan = new_database_plan(executor)
        if plan is None:
            return False

        self.verbosity, self.interactive = options["verbosity"], options["interactive"]
        for app_config in apps.get_app_configs():  # as Django's migrate: the apps' signal receivers
            if module_has_submodule(app_config.module, "management"):
                import_module(".management", app_config.name)
        # As Django sends it: the state of a database with no migration applied.
        before = ProjectState(real_apps=executor.loader.unmigrated_apps).apps
        emit_pre_migrate_signal(self.verbosity, self.interactive, database, stdout=self.stdout, apps=before, plan=plan)
        if options["run_syncdb"] and executor.loader.unmigrated_apps:
            self.sync_apps(connection, executor.loader.unmigrated_apps)
        end = create_from_models(executor, plan)
        if self.verbosity >= 1:
            tables = len(connection.introspection.table_names())
            self.stdout.write(
                self.style.MIGRATE_HEADING("A new database: ")
                + f"{tables} tables created from the migrations' end state, "
                f"{len(plan)} migrations ({', '.join(sorted(executor.loader.migrated_apps))}) recorded as applied."
            )
        emit_post_migrate_signal(self.verbosity, self.interactive, database, stdout=self.stdout, apps=end, plan=plan)
        return True

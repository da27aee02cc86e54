"""A new database made in one step from the migrations' end state, every migration recorded.

Replaying the migrations re-renders Django's migration state after nearly every operation;
rendering the end state once is much cheaper (docs/benchmarks-history.md, "A new database in one
step"). So on a database with no table at all, as Django's ``--run-syncdb`` does:

1. every table of a migrated app is created from the migrations' end state, rendered once;
2. the data steps a new database needs run, in plan order, with those models (``REVIEWED``);
3. every migration of the plan is recorded as applied, as the executor records it;
4. the caller sends ``pre_migrate`` and ``post_migrate`` as ``migrate`` does.

All in one transaction (the caller checks that the backend can roll back DDL), so a failure
leaves the database empty. Only a plan whose every migration is plain (Django's schema
operations, by exact class) or was read for a new database (``REVIEWED``) is taken this way;
anything else makes ``migrate`` replay the migrations, as a data migration run with the final
models would not see the columns of its own time. tests/core/test_migrations.py compares the
result with replayed and part-migrated databases.
"""

from __future__ import annotations

from django.db import router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.migrations import Migration
from django.db.migrations import operations as django_operations
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.operations import RunPython, RunSQL, SeparateDatabaseAndState
from django.db.migrations.state import StateApps

from core.db.migrations import CreateModels

#: Operations whose whole effect on a database is the state they leave: Django's own schema
#: operations and ``CreateModels``, matched by exact class (a subclass may do more).
PLAIN = frozenset(
    {
        getattr(django_operations, name)
        for name in django_operations.__all__
        if name not in ("RunPython", "RunSQL", "SeparateDatabaseAndState")
    }
    | {CreateModels}
)

#: Migrations holding more than plain operations, each read for what it does on a new database:
#: the ``RunPython`` functions that must run there (the others only rewrite rows a new database
#: lacks). A migration with more than plain operations not listed here replays the whole plan.
REVIEWED: dict[tuple[str, str], frozenset[str]] = {
    # Points proxy models' permissions at the proxies' content types: none exist yet.
    ("auth", "0011_update_proxy_permissions"): frozenset(),
    # Removes duplicate login attempts before their unique constraint.
    ("axes", "0007_alter_accessattempt_unique_together"): frozenset(),
    # The job table, made as pooling_job by the database side, then handed to core (state ends there too).
    ("pooling", "0001_squashed_0006_collection_source"): frozenset(),
    ("core", "0001_initial"): frozenset(),
    # Copies Django REST framework's tokens, from a table a new database does not have.
    ("core", "0004_api_token"): frozenset(),
    # The shared and results cache tables, which no model describes.
    ("annotation", "0001_squashed_0019_prolific_groups_bonuses"): frozenset({"create_cache_tables"}),
    # Turns the older --bonus options and Bonus rows into bonus rules and BonusPayment rows: none exist yet.
    ("annotation", "0023_one_bonus_system"): frozenset(),
    # Put existing studies, staff and annotators in the default group: a new database has none.
    ("core", "0007_research_groups"): frozenset(),
    ("pooling", "0008_research_groups"): frozenset(),
    ("annotation", "0027_research_groups"): frozenset(),
    # Record the methods of reports and routings stored before methods were recorded: a new database has none.
    ("metrics", "0013_report_methods"): frozenset(),
    ("annotation", "0034_routing_methods"): frozenset(),
    ("metrics", "0009_research_groups"): frozenset(),
    # A platform's models handed from annotation to its own app (state only); the app lists its side (reviewed).
    ("annotation", "0031_platform_models_to_their_apps"): frozenset(),
}


def reviewed(app_label: str, name: str, run: frozenset[str] = frozenset()) -> None:
    """List an app's migration as read for a new database (``REVIEWED``), by the app that owns it
    (a crowd platform's ``ready()``): ``run``, the names of its ``RunPython`` functions a new database needs."""
    REVIEWED[(app_label, name)] = run


def is_empty(connection: BaseDatabaseWrapper) -> bool:
    """No table at all (not even Django's migration records): nothing to keep or to upgrade."""
    with connection.cursor() as cursor:
        return not connection.introspection.table_names(cursor)


def _operations(operations):
    """``operations``, with each ``SeparateDatabaseAndState`` followed by its database side."""
    for operation in operations:
        yield operation
        if isinstance(operation, SeparateDatabaseAndState):
            yield from _operations(operation.database_operations)


def _to_run(migration: Migration) -> list[RunPython] | None:
    """The ``RunPython`` operations of ``migration`` a new database needs, or ``None`` if it has
    to be replayed: not atomic, raw SQL, an operation not read for a new database."""
    if not migration.atomic:
        return None
    reviewed = REVIEWED.get((migration.app_label, migration.name))
    found = []
    for operation in _operations(migration.operations):
        if type(operation) in PLAIN or (isinstance(operation, RunPython) and operation.code is RunPython.noop):
            continue
        if reviewed is None or isinstance(operation, RunSQL):
            return None
        if isinstance(operation, RunPython) and operation.code.__name__ in reviewed:
            if operation.atomic is False:
                return None
            found.append(operation)
        elif not isinstance(operation, RunPython | SeparateDatabaseAndState):
            return None
    return found


def new_database_plan(executor: MigrationExecutor) -> list[tuple[Migration, bool]] | None:
    """Every migration up to the graph's leaves, if their end state is all they make; else ``None``."""
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes(), clean_start=True)
    if any(backwards or _to_run(migration) is None for migration, backwards in plan):
        return None
    return plan


def create_from_models(executor: MigrationExecutor, plan: list[tuple[Migration, bool]]) -> StateApps:
    """Make the database of ``plan``'s end and record ``plan`` as applied; returns the models, for
    ``post_migrate``. The caller checked ``is_empty``.

    The models are the migrations' end state, not the project's classes: the two differ (auth's
    auto-created many-to-many tables' ``id`` is bigint in migrations, integer in the classes).
    """
    connection = executor.connection
    migrated = set(executor.loader.migrated_apps)
    end = executor.loader.project_state().apps
    models = [
        model
        for model in end.get_models()
        if model._meta.app_label in migrated
        and model._meta.can_migrate(connection)  # not a proxy, unmanaged or swapped model
        and router.allow_migrate_model(connection.alias, model)
    ]
    # One transaction: the schema editor's (SQLite turns its foreign-key checks off only
    # outside a transaction, so the editor opens it); the records are written inside it.
    with connection.schema_editor(atomic=True) as editor:
        editor.create_model(executor.recorder.Migration)
        for model in models:
            editor.create_model(model)
        # Indexes, constraints and foreign keys before the data steps, as each migration's editor would.
        for statement in editor.deferred_sql:
            editor.execute(statement)
        editor.deferred_sql.clear()
        for migration, _ in plan:
            for operation in _to_run(migration):
                if router.allow_migrate(connection.alias, migration.app_label, **operation.hints):
                    operation.code(end, editor)
        for migration, _ in plan:
            executor.record_migration(migration)
        executor.check_replacements()
    return end

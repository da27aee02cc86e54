"""A new database made in one step from the migrations' end state, every migration recorded.

On an empty database, ``migrate`` replays 40-odd migrations, and Django rebuilds its migration
state after nearly every operation (each ``AddField`` re-renders the changed model and every
model related to it): about 1.2 s of a 1.5 s ``migrate``. The end state itself costs a few
milliseconds (``loader.project_state()`` folds the operations' state changes without
rendering) and 40 ms to render once, so on a database with no table at all the end can be
made directly, as Django's ``--run-syncdb`` does for apps without migrations:

1. every table of a migrated app is created from the migrations' end state, rendered once
   (``schema_editor.create_model``: columns, indexes, constraints, many-to-many tables);
2. the data steps a new database needs then run, in plan order, with those models
   (``REVIEWED``: annotation's cache tables); the other data migrations rewrite rows a new
   database does not have;
3. every migration of the plan is recorded as applied, exactly as the executor records it
   (a squash's originals, then the squash);
4. ``pre_migrate`` and ``post_migrate`` are sent as ``migrate`` sends them (content types,
   permissions), by the caller.

All of it happens in one transaction (the caller checks that the backend can roll back DDL),
so a failure leaves the database empty. Only a plan whose every migration is plain (Django's
schema operations, matched by exact class) or was read for a new database (``REVIEWED``) is
taken this way: raw SQL, a data migration nobody read, a non-atomic migration or a custom
operation (``new_database_plan`` returns ``None``) makes ``migrate`` run the migrations one
by one, as Django does. A data migration run with the final models would not see the columns
of its own time, so none is run that was not read. tests/core/test_migrations.py compares a
database made this way with one made by replaying the migrations (``migrate --replay``) and
with databases migrated through the original migrations, on SQLite and PostgreSQL: the same
tables, columns, constraints, recorded migrations and permissions.
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

#: Migrations holding more than plain operations, each read for what it does on a new
#: database (and the result compared with a replay in tests/core/test_migrations.py): the
#: ``RunPython`` functions that must run there. Their other ``RunPython`` functions only
#: rewrite rows a new database does not have, and their ``SeparateDatabaseAndState``
#: operations end the database where they end the state. A migration with more than plain
#: operations that is not listed here is replayed, with the whole plan.
REVIEWED: dict[tuple[str, str], frozenset[str]] = {
    # Points proxy models' permissions at the proxies' content types: none exist yet.
    ("auth", "0011_update_proxy_permissions"): frozenset(),
    # Removes duplicate login attempts before their unique constraint.
    ("axes", "0007_alter_accessattempt_unique_together"): frozenset(),
    # The job table, made as pooling_job by the database side alone, then handed to core:
    # its state (core.Job, table core_job) is where the database side ends.
    ("pooling", "0001_squashed_0006_collection_source"): frozenset(),
    ("core", "0001_initial"): frozenset(),
    # Copies Django REST framework's tokens, from a table a new database does not have.
    ("core", "0004_api_token"): frozenset(),
    # The shared and results cache tables, which no model describes.
    ("annotation", "0001_squashed_0019_prolific_groups_bonuses"): frozenset({"create_cache_tables"}),
    # Turns the older --bonus options and Bonus rows into bonus rules and BonusPayment rows: none exist yet.
    ("annotation", "0023_one_bonus_system"): frozenset(),
    # Put existing studies, staff and annotators in the default group: a new database has none
    # (its first group is made on first ask, core.models.default_group).
    ("core", "0007_research_groups"): frozenset(),
    ("pooling", "0008_research_groups"): frozenset(),
    ("annotation", "0027_research_groups"): frozenset(),
    # Record the methods of 3c7dd83b on the reports and routings stored before methods were recorded:
    # a new database has none.
    ("metrics", "0013_report_methods"): frozenset(),
    ("annotation", "0034_routing_methods"): frozenset(),
    ("metrics", "0009_research_groups"): frozenset(),
    # A platform's models handed from annotation to its own app, the tables kept (state only); the
    # platform's app lists its side at start-up (:func:`reviewed`).
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
    """Make the database of ``plan``'s end from its models and record ``plan`` as applied.

    The models are the migrations' own end state (``loader.project_state()``, rendered once),
    not the project's classes: the two differ where Django's migration state does, e.g. the
    auto-created many-to-many tables' ``id`` follows ``DEFAULT_AUTO_FIELD`` in migrations
    (bigint) and the app's ``default_auto_field`` in the classes (integer on auth's). Returns
    those models, for the ``post_migrate`` signal, as ``migrate`` sends it. The caller checked
    ``is_empty``.
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
        # Indexes, constraints and (PostgreSQL) foreign keys now, as each migration's editor
        # would have made them before the next migration's data step.
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

"""A new database made in one step from the migrations' end state, every migration recorded.

On an empty database, ``migrate`` replays 40-odd migrations, and Django rebuilds its migration
state after nearly every operation (each ``AddField`` re-renders the changed model and every
model related to it): about 1.2 s of a 1.5 s ``migrate``. The end state itself costs a few
milliseconds (``loader.project_state()`` folds the operations' state changes without
rendering) and 40 ms to render once, so on a database with no table at all the end can be
made directly, as Django's ``--run-syncdb`` does for apps without migrations:

1. every table of a migrated app is created from the migrations' end state, rendered once
   (``schema_editor.create_model``: columns, indexes, constraints, many-to-many tables);
2. every ``RunPython`` of the plan then runs, in plan order, with those models: on a new
   database a data migration finds no row to change; the ones that create something
   (annotation's cache tables) create it;
3. every migration of the plan is recorded as applied, exactly as the executor records it
   (a squash's originals, then the squash);
4. ``pre_migrate`` and ``post_migrate`` are sent as ``migrate`` sends them (content types,
   permissions), by the caller.

All of it happens in one transaction, so a failure leaves the database empty. Only a plan
made of operations whose whole effect is their end state is taken this way: a ``RunSQL`` or any
operation this module does not know (``new_database_plan`` returns ``None``) makes ``migrate``
run the migrations one by one, as Django does. tests/core/test_migrations.py compares a
database made this way with one made by replaying the migrations (``migrate --replay``) and
with databases migrated through the original migrations, on SQLite and PostgreSQL: the same
tables, columns, constraints, recorded migrations and permissions.
"""

from __future__ import annotations

from django.db import router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.migrations import Migration
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.operations import RunPython, SeparateDatabaseAndState
from django.db.migrations.operations.fields import FieldOperation
from django.db.migrations.operations.models import IndexOperation, ModelOperation, ModelOptionOperation
from django.db.migrations.state import StateApps

from core.db.migrations import CreateModels

#: Operations whose effect on the database is wholly described by the final models.
SCHEMA_OPERATIONS = (ModelOperation, ModelOptionOperation, IndexOperation, FieldOperation, CreateModels)


def is_empty(connection: BaseDatabaseWrapper) -> bool:
    """No table at all (not even Django's migration records): nothing to keep or to upgrade."""
    with connection.cursor() as cursor:
        return not connection.introspection.table_names(cursor)


def _data_operations(operations) -> list[RunPython] | None:
    """The ``RunPython`` operations among ``operations``, or ``None`` if one is neither that nor a
    schema operation (a ``RunSQL``, a third party's custom operation)."""
    found = []
    for operation in operations:
        if isinstance(operation, SeparateDatabaseAndState):
            inner = _data_operations(operation.database_operations)
            if inner is None:
                return None
            found += inner
        elif isinstance(operation, RunPython):
            if operation.code is not RunPython.noop:
                found.append(operation)
        elif not isinstance(operation, SCHEMA_OPERATIONS):
            return None
    return found


def new_database_plan(executor: MigrationExecutor) -> list[tuple[Migration, bool]] | None:
    """Every migration up to the graph's leaves, if each can be applied from the models; else ``None``."""
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes(), clean_start=True)
    if any(backwards or _data_operations(migration.operations) is None for migration, backwards in plan):
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
        for migration, _ in plan:
            for operation in _data_operations(migration.operations):
                operation.code(end, editor)
        for migration, _ in plan:
            executor.record_migration(migration)
        executor.check_replacements()
    return end

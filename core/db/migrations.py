"""One migration operation for the squashed migrations: many models created in one state change.

Django's ``CreateModel`` re-renders, for every model it adds, every model related to it,
recursively: most of ``migrate``'s time on a new database for a squash of related models.
``CreateModels`` adds the same model states and renders them once, then creates their tables in
order: the same tables and state, a fraction of the work. Reversing drops them in reverse.
"""

from django.db.migrations.operations.base import Operation
from django.db.migrations.operations.models import CreateModel


class CreateModels(Operation):
    """``CreateModel`` for each of ``operations``, with the state rendered once for all."""

    reduces_to_sql = True
    reversible = True

    def __init__(self, operations: list[CreateModel]) -> None:
        self.operations = list(operations)
        super().__init__()

    def deconstruct(self):
        return (self.__class__.__qualname__, [self.operations], {})

    def state_forwards(self, app_label, state) -> None:
        rendered = state.__dict__.pop("apps", None)  # the cached StateApps: leave it aside while adding
        try:
            for operation in self.operations:
                operation.state_forwards(app_label, state)
        finally:
            if rendered is not None:
                state.__dict__["apps"] = rendered
        if rendered is not None:
            # As CreateModel does (delay=False): every model reaching the new ones, recursively, is
            # rendered again, so that no rendered model keeps a relation to a stale class.
            state.reload_models([(app_label, operation.name_lower) for operation in self.operations], delay=False)

    def database_forwards(self, app_label, schema_editor, from_state, to_state) -> None:
        for operation in self.operations:
            model = to_state.apps.get_model(app_label, operation.name)
            if self.allow_migrate_model(schema_editor.connection.alias, model):
                schema_editor.create_model(model)

    def database_backwards(self, app_label, schema_editor, from_state, to_state) -> None:
        for operation in reversed(self.operations):
            model = from_state.apps.get_model(app_label, operation.name)
            if self.allow_migrate_model(schema_editor.connection.alias, model):
                schema_editor.delete_model(model)

    def references_model(self, name, app_label) -> bool:
        return any(operation.references_model(name, app_label) for operation in self.operations)

    def describe(self) -> str:
        return f"Create models {', '.join(operation.name for operation in self.operations)}"

    @property
    def migration_name_fragment(self) -> str:
        return "_".join(operation.name_lower for operation in self.operations)[:40]

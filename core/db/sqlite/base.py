"""Django's SQLite backend, creating the database's folder when it first opens the file (not at
settings' import: a typo in ``VAR_DIR`` would make a new tree), and reading a foreign key's
prefetch as an ``IN`` list (:mod:`core.db.sqlite.compiler`).
"""

from pathlib import Path

from django.db.backends.sqlite3.base import DatabaseWrapper as SQLiteDatabaseWrapper
from django.db.backends.sqlite3.operations import DatabaseOperations as SQLiteOperations


class DatabaseOperations(SQLiteOperations):
    #: A foreign key's prefetch read as an IN list, not a chain of ORs too deep for SQLite (issue 53).
    compiler_module = "core.db.sqlite.compiler"


class DatabaseWrapper(SQLiteDatabaseWrapper):
    ops_class = DatabaseOperations

    def get_new_connection(self, conn_params):
        name = str(conn_params.get("database", ""))
        if name and name != ":memory:" and not name.startswith("file:"):
            Path(name).parent.mkdir(parents=True, exist_ok=True)
        return super().get_new_connection(conn_params)

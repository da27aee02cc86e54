"""``manage.py`` is Django's own: every command runs in its own process with the settings it was given.

A command given Django's ``--settings`` (and ``--pythonpath``) acts on those settings' database,
never on the one the environment names. Each command here is a real ``manage.py`` process, as an
operator types it; the databases are read with the standard library's ``sqlite3``, not through
the project's code.
"""

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

ALTERNATIVE_SETTINGS = """
from config.settings import *  # noqa: F401,F403

DATABASES = {{"default": {{**DATABASES["default"], "NAME": {name!r}}}}}  # noqa: F405
"""


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"manage.py {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done


def accounts(database: Path) -> list[str]:
    with sqlite3.connect(database) as connection:
        return [name for (name,) in connection.execute("SELECT username FROM auth_user ORDER BY username")]


@pytest.mark.slow
def test_flush_with_other_settings_empties_their_database_and_leaves_the_default_untouched(tmp_path):
    default, alternative = tmp_path / "default.sqlite3", tmp_path / "alternative.sqlite3"
    (tmp_path / "alt_settings.py").write_text(ALTERNATIVE_SETTINGS.format(name=str(alternative)))
    env = {
        **{k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
        "DJANGO_DEBUG": "1",
        "VAR_DIR": str(tmp_path / "var"),
        "DATABASE_URL": f"sqlite:///{default}",
        "DJANGO_SUPERUSER_PASSWORD": "not-used-here",
    }
    elsewhere = ["--settings", "alt_settings", "--pythonpath", str(tmp_path)]
    for name, where in (("kept", []), ("flushed", elsewhere)):
        manage("migrate", "-v", "0", *where, env=env)
        manage("createsuperuser", "--noinput", "--username", name, "--email", f"{name}@example.org", *where, env=env)
    assert (accounts(default), accounts(alternative)) == (["kept"], ["flushed"])

    manage("flush", "--noinput", *elsewhere, env=env)

    assert accounts(alternative) == []
    assert accounts(default) == ["kept"]


@pytest.mark.slow
def test_a_command_on_a_database_never_migrated_says_to_migrate_and_then_works(tmp_path):
    """A user who skips ``migrate`` is told so, not shown the database's traceback ("no such table");
    after ``migrate`` the same command works."""
    database = tmp_path / "new.sqlite3"
    (tmp_path / "q.tsv").write_text("1\twhat is a nurse\n")
    env = {
        **{k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"},
        "DJANGO_DEBUG": "1",
        "VAR_DIR": str(tmp_path / "var"),
        "DATABASE_URL": f"sqlite:///{database}",
    }
    command = [sys.executable, "manage.py", "import_queries", str(tmp_path / "q.tsv"), "--name", "q"]
    for extra in ([], ["--group", "lab"]):  # the group is looked up first: its table is missing too
        refused = subprocess.run(command + extra, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
        assert f"the database {database} has no tables yet" in refused.stderr
        assert "run `python manage.py migrate` first" in refused.stderr and "no such table" in refused.stderr

    manage("migrate", "-v", "0", env=env)
    assert "Imported: query set 'q': 1 queries" in manage(*command[2:], env=env).stdout

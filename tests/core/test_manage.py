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

"""The resident process (core.management.resident): commands handed to it behave as in their
own process, and it never serves a changed checkout, another environment or another user.

Each test starts real ``manage.py`` processes and real residents, in a private runtime folder
of their own, and stops the residents afterwards. The rest of the suite runs with
``MANAGE_RESIDENT=off`` (tests/conftest.py)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from core.management.resident import client

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    runtime = Path(tempfile.mkdtemp(prefix="res"))  # short: a socket's path holds 107 bytes
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "DJANGO_", "DATABASE_URL"))}
    environ.update(
        XDG_RUNTIME_DIR=str(runtime),
        MANAGE_RESIDENT="on",
        DJANGO_DEBUG="1",
        DJANGO_SETTINGS_MODULE="config.settings",
        VAR_DIR=str(tmp_path / "var"),
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
    )
    yield environ
    for sock in runtime.glob("genderbias-resident-*/*.sock"):
        client.request(sock, "stop")
    shutil.rmtree(runtime, ignore_errors=True)


def manage(env: dict[str, str], *arguments: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *arguments],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        **kwargs,
    )


def resident_of(env: dict[str, str]) -> Path:
    folder = Path(env["XDG_RUNTIME_DIR"]) / f"genderbias-resident-{os.getuid()}"
    return folder / f"{client.key(env, str(ROOT))}.sock"


def usage(env: dict[str, str], settle: bool = True) -> dict:
    """The resident's answer to ``usage``; by default once the commands it runs have ended."""
    answer = client.request(resident_of(env), "usage", settle=settle)
    assert answer is not None, "no resident listens"
    return answer


@pytest.mark.embedded
def test_a_command_in_the_resident_says_and_returns_what_its_own_process_would(env, tmp_path):
    queries = tmp_path / "q.tsv"
    queries.write_text("1\twho is the ceo\n2\tnurse salary\n")
    assert manage(env, "migrate", "-v", "0").returncode == 0
    first = usage(env)

    handed = manage(env, "import_queries", str(queries), "--name", "handed")
    own = manage(dict(env, MANAGE_RESIDENT="off"), "import_queries", str(queries), "--name", "own")
    assert (handed.returncode, own.returncode) == (0, 0)
    assert handed.stdout.replace("handed", "NAME") == own.stdout.replace("own", "NAME")
    assert "2 queries" in handed.stdout

    missing = manage(env, "import_queries", str(tmp_path / "absent.tsv"), "--name", "x")
    alone = manage(dict(env, MANAGE_RESIDENT="off"), "import_queries", str(tmp_path / "absent.tsv"), "--name", "x")
    assert missing.returncode == alone.returncode == 1
    assert missing.stderr == alone.stderr and "absent.tsv" in missing.stderr

    after = usage(env)
    assert after["usage"]["pid"] == first["usage"]["pid"]
    assert after["commands"] == first["commands"] + 2  # the resident ran both, the off switch none
    # ... and its forks did the work (not failing at once and leaving it to the caller): an
    # import costs its fork tens of milliseconds, a fork that fails ~1 ms and logs why
    assert after["usage"]["commands_cpu"] - first["usage"]["commands_cpu"] > 0.03
    log = resident_of(env).with_suffix(".log")
    assert not log.exists() or "Traceback" not in log.read_text()


@pytest.mark.embedded
def test_a_changed_folder_on_the_path_retires_the_resident_and_the_command_still_runs(env, tmp_path):
    extra = tmp_path / "site"
    extra.mkdir()
    env["PYTHONPATH"] = str(extra)
    assert manage(env, "check").returncode == 0
    before = usage(env)["usage"]["pid"]

    time.sleep(0.01)
    (extra / "shadow.py").write_text("")  # a new module where the resident imports from
    again = manage(env, "check")
    assert again.returncode == 0 and "no issues" in again.stdout
    assert usage(env)["usage"]["pid"] != before
    assert _ended(before)


def _ended(pid: int, within: float = 10.0) -> bool:
    """The process is gone, or a zombie its new parent has not reaped yet."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state in {"Z", "X"}:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.embedded
def test_another_database_gets_a_resident_of_its_own_and_interactive_commands_their_own_process(env, tmp_path):
    assert manage(env, "check").returncode == 0
    other = dict(env, DATABASE_URL=f"sqlite:///{tmp_path / 'other.sqlite3'}")
    assert manage(other, "check").returncode == 0
    assert resident_of(env) != resident_of(other)
    assert usage(env)["usage"]["pid"] != usage(other)["usage"]["pid"]

    served = usage(env)["commands"]
    shell = manage(env, "shell", "-c", "print(6 * 7)")
    assert shell.returncode == 0 and shell.stdout.split()[-1] == "42"
    assert usage(env)["commands"] == served


@pytest.mark.embedded
def _a_long_command_under_way(env: dict[str, str]) -> subprocess.Popen:
    assert manage(env, "check").returncode == 0
    served = usage(env)["commands"]
    process = subprocess.Popen(
        [sys.executable, "manage.py", "crowd_coverage", "--queries", "300", "--studies", "100000"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while usage(env, settle=False)["commands"] == served and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    return process


@pytest.mark.embedded
def test_ctrl_c_reaches_the_command_and_the_caller_exits_as_it_would(env):
    process = _a_long_command_under_way(env)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == -signal.SIGINT  # as Python itself ends on an unhandled KeyboardInterrupt
    assert "KeyboardInterrupt" in err
    assert usage(env)["running"] == 0  # the command ended too


@pytest.mark.embedded
def test_a_command_killed_in_the_resident_ends_its_caller_the_same_way(env):
    process = _a_long_command_under_way(env)
    resident = usage(env, settle=False)["usage"]["pid"]
    forks = subprocess.run(["ps", "-o", "pid=", "--ppid", str(resident)], capture_output=True, text=True)
    (fork,) = [int(pid) for pid in forks.stdout.split()]
    os.kill(fork, signal.SIGKILL)  # the out-of-memory killer, say
    process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL
    assert usage(env)["running"] == 0


def test_the_key_ignores_a_terminals_own_variables_and_nothing_else():
    base = {"DATABASE_URL": "sqlite:///a", "PWD": "/x", "COLUMNS": "80"}
    same = dict(base, PWD="/y", COLUMNS="200", OLDPWD="/z")
    assert client.key(base, str(ROOT)) == client.key(same, str(ROOT))
    assert client.key(base, str(ROOT)) != client.key(dict(base, DATABASE_URL="sqlite:///b"), str(ROOT))
    assert client.key(base, str(ROOT)) != client.key(dict(base, LOG_LEVEL="DEBUG"), str(ROOT))
    assert client.key(base, str(ROOT)) != client.key(base, "/elsewhere")


@pytest.mark.parametrize("mode", [0o755, 0o770])
def test_a_folder_others_can_enter_is_not_used(tmp_path, monkeypatch, mode):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    folder = tmp_path / f"genderbias-resident-{os.getuid()}"
    folder.mkdir()
    folder.chmod(mode)
    assert client.folder() is None
    folder.chmod(0o700)
    assert client.folder() == str(folder)


def test_a_socket_path_too_long_for_an_address_means_no_resident(tmp_path, monkeypatch):
    deep = tmp_path / ("x" * 90)
    deep.mkdir()
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(deep))
    assert client.socket_path({}, str(ROOT)) is None
    monkeypatch.setenv("XDG_RUNTIME_DIR", tempfile.gettempdir())
    assert client.socket_path({}, str(ROOT)) is not None


def test_a_link_in_place_of_the_folder_is_not_followed(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    (tmp_path / f"genderbias-resident-{os.getuid()}").symlink_to(target)
    assert client.folder() is None


def test_switched_off_or_given_interpreter_options_the_command_runs_itself(monkeypatch):
    monkeypatch.setenv("MANAGE_RESIDENT", "off")
    assert client.run(["manage.py", "check"], str(ROOT)) is None
    monkeypatch.setenv("MANAGE_RESIDENT", "on")
    monkeypatch.setattr(sys, "orig_argv", [sys.executable, "-X", "dev", "manage.py", "check"])
    monkeypatch.setattr(sys, "argv", ["manage.py", "check"])
    assert client.run(["manage.py", "check"], str(ROOT)) is None


@pytest.mark.django_db
def test_a_fork_skips_only_the_checks_the_resident_found_clean(monkeypatch):
    """What a fork of a resident whose checks were clean does: a command's own run of them
    (no database) is skipped; the checks against a database, as ``migrate`` runs them, are not.
    Asked as a command asks (``BaseCommand.check``, through ``django.core.checks.run_checks``)."""
    from django.core import checks
    from django.core.checks.registry import registry
    from django.core.management.base import BaseCommand, SystemCheckError

    from core.management.resident.server import _trust_clean_checks

    monkeypatch.setattr(checks, "run_checks", checks.run_checks)  # restored after the test
    monkeypatch.setattr(registry, "registered_checks", set(registry.registered_checks))

    def broken(app_configs, databases, **kwargs):
        return [checks.Error("broken", id="test.E001")]

    registry.register(broken)
    command = BaseCommand()
    with pytest.raises(SystemCheckError, match=r"test\.E001"):
        command.check()
    _trust_clean_checks()
    command.check()  # skipped: nothing raised
    with pytest.raises(SystemCheckError, match=r"test\.E001"):
        command.check(databases=["default"])
    with pytest.raises(SystemCheckError, match=r"test\.E001"):
        command.check(include_deployment_checks=True)


def test_the_fork_takes_on_the_callers_umask_niceness_and_limits():
    """What ``umask 077; nice -n 3 manage.py …`` under ``ulimit -n 64`` gives the fork (read
    back inside a real fork, as the resident's are)."""
    import json
    import resource

    from core.management.resident.server import _inherit

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    caller = {
        "umask": 0o077,
        "nice": os.getpriority(os.PRIO_PROCESS, 0) + 3,
        "limits": {"RLIMIT_NOFILE": [64, hard], "RLIMIT_NOTALIMIT": [1, 1], "os.system": [0, 0]},
    }
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (the fork)
        try:
            _inherit(caller)
            mask = os.umask(0)
            got = {"umask": mask, "nice": os.getpriority(os.PRIO_PROCESS, 0)}
            got["nofile"] = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            os.write(write, json.dumps(got).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        got = json.loads(pipe.read())
    os.waitpid(child, 0)
    assert got == {"umask": 0o077, "nice": caller["nice"], "nofile": 64}
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == (soft, hard)  # this process untouched

"""The real processes the fault tests start, kill and restart.

Every process runs in its own session (process group), so ``kill -9`` reaches it and its
children and nothing outlives a test: each helper's ``stop`` is called by a fixture's
finaliser whatever the test did.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]


def wait_until(condition: Callable[[], object], timeout: float, what: str, interval: float = 0.1) -> object:
    """Poll ``condition`` until it returns something truthy; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def parent_pid(pid: int) -> int:
    """The process that started ``pid`` (a Celery pool process's worker)."""
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


class Process:
    """A child process in its own session, with its output in a log file."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path, name: str) -> None:
        self.args, self.env, self.log, self.name = args, env, log, name
        self.popen: subprocess.Popen | None = None

    def start(self) -> Process:
        with open(self.log, "ab") as out:
            self.popen = subprocess.Popen(
                self.args, env=self.env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        return self

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def kill9(self) -> None:
        """``kill -9`` the whole process group (a lost machine: no clean-up of any kind)."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)
            self.popen.wait(10)

    def stop(self, timeout: float = 10) -> None:
        """Ask politely (SIGTERM), then ``kill -9`` whatever is left of the group."""
        if self.alive():
            try:
                os.killpg(self.pid, signal.SIGTERM)
                self.popen.wait(timeout)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        if self.popen is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)
            self.popen.wait(10)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


class Redis:
    """A Redis with its append-only file on (``appendfsync always``), restartable over the same data."""

    def __init__(self, port: int, directory: Path) -> None:
        self.port, self.directory = port, directory
        self.process: Process | None = None

    def start(self) -> None:
        server = shutil.which("redis-server") or "/usr/bin/redis-server"
        args = [server, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory)]
        args += ["--appendonly", "yes", "--appendfsync", "always", "--save", ""]
        self.process = Process(args, dict(os.environ), self.directory / "redis.log", "redis").start()
        wait_until(lambda: port_open(self.port), 10, f"Redis on port {self.port}")

    def kill9(self) -> None:
        self.process.kill9()
        wait_until(lambda: not port_open(self.port), 5, "Redis to go away")

    def restart(self) -> None:
        """``kill -9`` then start again: only what the append-only file holds survives."""
        self.kill9()
        self.start()

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()


class Postgres:
    """The PostgreSQL cluster bin/test started (``FAULTS_PG_DATA``, ``FAULTS_PG_BIN``), restarted in place."""

    def __init__(self, data: str, bin_dir: str) -> None:
        self.data, self.bin_dir = data, bin_dir

    def _pg_ctl(self, *args: str) -> None:
        command = [str(Path(self.bin_dir) / "pg_ctl"), "-D", self.data, *args]
        if os.geteuid() == 0:  # the cluster belongs to the postgres user
            command = ["su", "postgres", "-s", "/bin/sh", "-c", " ".join(command)]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, timeout=60)

    def restart(self) -> None:
        """Stop (fast: every session is cut off at once) and start again with the same options."""
        self._pg_ctl("-m", "fast", "-w", "restart")


def database_url(settings_dict: dict) -> str:
    """The URL of the test database the test process uses, for the processes it starts."""
    user = settings_dict.get("USER") or "postgres"
    password = f":{settings_dict['PASSWORD']}" if settings_dict.get("PASSWORD") else ""
    return f"postgres://{user}{password}@{settings_dict['HOST']}:{settings_dict['PORT']}/{settings_dict['NAME']}"


def redis_port(broker_url: str) -> int:
    return urlsplit(broker_url).port or 6379


def celery_worker(name: str, env: dict[str, str], log: Path) -> Process:
    """A real worker: the prefork pool with one process, as in production (docs/deployment.md)."""
    args = [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "prefork", "--concurrency", "1"]
    args += ["--hostname", f"{name}@%h", "--without-gossip", "--without-mingle", "--loglevel", "INFO"]
    return Process(args, env, log, name)


def gunicorn(port: int, env: dict[str, str], log: Path, workers: int = 2, threads: int = 4) -> Process:
    args = [sys.executable, "-m", "gunicorn", "-c", "python:config.gunicorn", "config.wsgi"]
    args += ["--bind", f"127.0.0.1:{port}", "--workers", str(workers), "--threads", str(threads)]
    return Process(args, env, log, "gunicorn")


def manage(args: list[str], env: dict[str, str], log: Path) -> Process:
    return Process([sys.executable, "manage.py", *args], env, log, f"manage.py {args[0]}")

"""Measuring benchmarks: shared by every benchmark command. Pure module (no Django)."""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

#: The project's folder, where ``python -m benchmarks.…`` finds its modules.
ROOT = Path(__file__).resolve().parent.parent


def load_average() -> str:
    """The machine's load averages (1, 5, 15 minutes) as /proc/loadavg gives them: a figure's context on a
    shared machine."""
    try:
        with open("/proc/loadavg") as file:
            return " ".join(file.read().split()[:3])
    except OSError:
        return "unknown"


def setup_django() -> None:
    """Django in a benchmark's own process (the site's settings unless its environment names others)."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()


def run_module(module: str, *args: object, **options) -> dict:
    """``python -m module args`` in a fresh process (its own imports and peak memory) from the project's folder:
    the JSON object its last line prints; a failure is :class:`subprocess.CalledProcessError` (with its stderr)."""
    done = subprocess.run(
        [sys.executable, "-m", module, *map(str, args)], check=True, capture_output=True, text=True, cwd=ROOT, **options
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def shown(items: Iterable, write: Callable[[str], object]) -> list:
    """A benchmark's steps as they come: its progress lines (``str``) written, the rest returned in order."""
    kept = []
    for item in items:
        if isinstance(item, str):
            write(item)
        else:
            kept.append(item)
    return kept


def peak_memory_mb(pid: int | str = "self") -> float:
    """A process's peak resident memory (VmHWM; this process by default): unlike ``ru_maxrss``,
    not inherited across fork."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 if pid == "self" else 0.0


def tree_peak_memory_mb(pid: int) -> float:
    """The largest peak resident memory among a live process and its descendants (a Celery
    worker's pool child does the work, so its own figure is the worker's)."""
    peaks = []
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            peaks.append(peak_memory_mb(current))
        except OSError:
            continue
        todo += children(current)
    return max(peaks, default=0.0)


# --- server CPU from /proc (Linux) ------------------------------------------------------------
def _stat_fields(pid: int) -> list[str]:
    """Fields of /proc/PID/stat after the command name (which may hold spaces): [0] is the state."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()


def children(pid: int) -> list[int]:
    """Live child processes of ``pid`` (its threads' ``children`` lists, else a scan of /proc)."""
    found: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as kids:
                found += [int(k) for k in kids.read().split()]
        return found
    except OSError:
        pass
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if int(_stat_fields(int(entry))[1]) == pid:
                    found.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return found


def process_cpu_seconds(pid: int) -> float:
    """CPU time used so far by a live process, all its threads (``schedstat``: nanoseconds; else ticks)."""
    try:
        total = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as stat:
                total += int(stat.read().split()[0])
        if total:
            return total / 1e9
    except (OSError, ValueError):
        pass
    return _stat_seconds(pid, 11)  # utime + stime


def _stat_seconds(pid: int, first: int) -> float:
    """Two clock-tick fields of /proc/PID/stat from ``first`` on, in seconds: 11 utime + stime, 13 the children's
    ``pid`` has already waited for (cutime + cstime)."""
    try:
        fields = _stat_fields(pid)
    except OSError:
        return 0.0
    return (int(fields[first]) + int(fields[first + 1])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> float:
    """CPU time of a server process and its children, live and gone (gunicorn's master, PostgreSQL's postmaster)."""
    return (
        process_cpu_seconds(pid) + _stat_seconds(pid, 13) + sum(process_cpu_seconds(child) for child in children(pid))
    )


def sqlite_commit_seconds(
    path: str, journal: str, synchronous: str, checkpoint_pages: int, commits: int = 2000
) -> float:
    """Wall-clock seconds per small write transaction (one 200-byte row, as a submit writes) in a fresh file,
    to set the SQLite settings the site chooses (config/settings.py) against the alternatives."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute(f"PRAGMA journal_mode={journal}")
        db.execute(f"PRAGMA synchronous={synchronous}")
        db.execute(f"PRAGMA wal_autocheckpoint={checkpoint_pages}")
        db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, hit INTEGER, body TEXT)")
        db.execute("CREATE INDEX t_hit ON t (hit)")
        started = time.perf_counter()
        for i in range(commits):
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO t (hit, body) VALUES (?, ?)", (i % 997, "x" * 200))
            db.execute("COMMIT")
        return (time.perf_counter() - started) / commits
    finally:
        db.close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)


def postmaster_pid(connection) -> int | None:
    """PostgreSQL's postmaster (the parent of ``connection``'s backend) when it runs on this
    machine, so that a benchmark counts the database's CPU too; None on SQLite or a remote server."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    try:
        return int(_stat_fields(backend)[1])
    except OSError:
        return None

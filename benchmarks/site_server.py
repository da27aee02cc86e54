"""What the site's benchmarks share: a throw-away database, annotator accounts, and a gunicorn with the shipped
configuration (their batches of made-up queries: :mod:`tests.support.batches`).

``benchmark_load`` (annotators, and ``--burst`` Prolific participants), ``benchmark_cycle`` (server CPU per
request), ``benchmark_pages`` and ``benchmark_routing`` each start the site as it is deployed
(``config.gunicorn``), wait until its workers answer, and stop it whatever happened.
"""

from __future__ import annotations

import http.client
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client

from annotation.models import Batch
from benchmarks.measure import postmaster_pid, tree_cpu_seconds
from platforms.inhouse.services.annotators import create_annotator
from tests.loopback import free_port


def refuse_real_batches(prefix: str, how: str = "") -> None:
    """A benchmark writes batches named ``prefix…``: a database holding others is not a throw-away one."""
    if Batch.objects.exclude(name__startswith=prefix).exists():
        raise CommandError(f"this database holds real batches: run the benchmark on a throw-away database{how}")


def annotator_accounts(names: list[str], password: str, *, reuse: bool = False) -> list[str]:
    """In-house annotators ``names`` with one password hash for all (hashing is not what is measured)."""
    for name in names:
        create_annotator(name, reuse=reuse)
    get_user_model().objects.filter(username__in=names).update(password=make_password(password))
    return names


def researcher_client(username: str, password: str) -> Client:
    """Django's test client logged in as the benchmark's researcher (a staff account, made on the first run)."""
    model = get_user_model()
    user = model.objects.filter(username=username).first() or model.objects.create_user(
        username, password=password, is_staff=True
    )
    client = Client(SERVER_NAME="localhost")
    client.force_login(user)
    return client


def analyze() -> None:
    """On PostgreSQL, what autovacuum does within a minute of a large change: the planner then knows the
    tables' sizes (without it, the first plans are guesses about empty tables)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


@contextmanager
def served(
    name: str, *, workers: int, threads: int, say: Callable[[str], object], port: int | None = None, detail: str = ""
) -> Iterator[tuple[int, subprocess.Popen]]:
    """``(port, server)``: gunicorn with the shipped configuration on loopback (a free port unless given), its
    log a new file, once it answers (60 s at most); ``say`` is told where (the database, ``detail``, the log)
    before it starts. Stopped whatever happens: politely, then for good after 30 s."""
    log = Path(tempfile.mkstemp(prefix=f"benchmark-{name}-gunicorn-", suffix=".log")[1])
    port = port or free_port()
    database = f"{connection.vendor} ({connection.settings_dict['NAME']})"
    say(f"gunicorn {workers}x{threads} on 127.0.0.1:{port}, {database}{detail}; log {log}")
    args = [sys.executable, "-m", "gunicorn", "-c", "python:config.gunicorn", "config.wsgi"]
    args += ["--bind", f"127.0.0.1:{port}", "--workers", str(workers), "--threads", str(threads)]
    with open(log, "ab") as out:
        server = subprocess.Popen(args, cwd=settings.BASE_DIR, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while not site_answers(port):
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            raise CommandError(f"gunicorn did not start; see {log}")
        time.sleep(0.2)
    try:
        yield port, server
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def site_answers(port: int) -> bool:
    """Whether the site serves its login page (gunicorn's workers are up, not just its socket)."""
    site = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        site.request("GET", "/accounts/login/")
        return site.getresponse().status == 200
    except OSError:
        return False
    finally:
        site.close()


class ServerCPU:
    """The server's CPU seconds from /proc: gunicorn's processes and, on PostgreSQL on this machine, the database's."""

    def __init__(self, gunicorn: int) -> None:
        self.gunicorn, self.postmaster = gunicorn, postmaster_pid(connection)

    def now(self) -> tuple[float, float]:
        return tree_cpu_seconds(self.gunicorn), (tree_cpu_seconds(self.postmaster) if self.postmaster else 0.0)

    def spent(self, work: Callable[[], object]) -> tuple[object, float, float, float]:
        """``work()``'s result, its wall seconds, and the server CPU seconds it took (gunicorn's, the database's)."""
        before, started = self.now(), time.perf_counter()
        result = work()
        wall, after = time.perf_counter() - started, self.now()
        return result, wall, after[0] - before[0], after[1] - before[1]

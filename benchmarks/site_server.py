"""What the site's benchmarks share: a gunicorn with the shipped configuration (their batches of made-up
queries: :mod:`tests.support.batches`).

``benchmark_load`` (annotators, and ``--burst`` Prolific participants) and
``benchmark_cycle`` (server CPU per request) each start the site as it is deployed
(``config.gunicorn``), wait until its workers answer, and stop it whatever happened.
"""

from __future__ import annotations

import http.client
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError


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


def start_gunicorn(port: int, *, workers: int, threads: int, log: Path) -> subprocess.Popen:
    """gunicorn with the shipped configuration on loopback, once it answers (60 s at most)."""
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
    return server


def stop(server: subprocess.Popen) -> None:
    """Stop a server: politely, then for good after 30 s."""
    server.terminate()
    try:
        server.wait(30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()

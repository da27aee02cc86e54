"""Test environment: what a deployment sets, set before Django reads its settings.

Loaded with ``-p tests.pytest_environment`` (pyproject's addopts) so it runs before
pytest-django configures Django. Production settings refuse to start without secrets and
redirect plain HTTP to HTTPS; the test client speaks plain HTTP, so the suite runs with
debug off (as in production) and those two relaxations, which an operator behind a TLS
proxy would also choose. Values already in the environment win, and subprocesses that
tests start (manage.py, Celery workers) inherit the same environment.

Under pytest-xdist (``-n 2``) each worker gets a ``VAR_DIR`` of its own (``test-gw0``,
``test-gw1``… inside the one given, or inside the checkout's ``var/``), so no two workers
share a folder or a file there; their test databases are apart too (in memory on SQLite,
``test_<name>_gw0``… on PostgreSQL: tests/conftest.py).
"""

import os
from pathlib import Path

TEST_ENVIRONMENT = {
    "DJANGO_SECRET_KEY": "test-only-secret-key-not-for-production-0123456789abcdef",
    "WORKER_PSEUDONYM_KEY": "test-only-pseudonym-key-0123456789abcdef",
    "DJANGO_SECURE_SSL_REDIRECT": "0",
    "DJANGO_SECURE_COOKIES": "0",
    # Without a broker a Job runs at the commit, in the test's thread, so a test can assert on it
    # at once; tests of the background threads (tests/core/jobs/test_local_jobs.py) switch it back.
    "JOB_LOCAL_RUNNER": "inline",
    # All of the site's calls to Prolific start at most 10 a second by default, evenly spread: each call
    # to the tests' fake Prolific waited its 0.1 s turn (issue 55: 164 calls, 12.8 s idle in
    # test_prolific_webhooks alone). The tests of the pace set it themselves (test_prolific_arrivals_hostile:
    # 5 a second in-process, 10 for its gunicorn).
    "PROLIFIC_API_CALLS_PER_SECOND": "1000",
}

for _name, _value in TEST_ENVIRONMENT.items():
    os.environ.setdefault(_name, _value)

_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if _WORKER:
    _VAR = os.environ.get("VAR_DIR") or str(Path(__file__).resolve().parent.parent / "var")
    os.environ["VAR_DIR"] = str(Path(_VAR) / f"test-{_WORKER}")

# Loopback HTTP servers in the tests (pytest-django's live server, the test servers built on
# http.server) write an answer in two sends, its head and then its body; with Nagle's algorithm on,
# the body waits for the client's delayed ACK of the head, 40 ms on Linux, so every request to them
# took at least 40 ms of idle time (6,274 requests of the API fuzzing: 295 s of its 346 s). Python's
# socketserver turns Nagle off per connection when asked (TCP_NODELAY), as gunicorn does.
import http.server  # noqa: E402

http.server.BaseHTTPRequestHandler.disable_nagle_algorithm = True

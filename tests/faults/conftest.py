"""Fault tests: real PostgreSQL, Redis (append-only file on), Celery workers and gunicorn, killed and restarted.

bin/test runs them in a stage of their own (``pytest -m faults``) with:

- ``DATABASE_URL``: its PostgreSQL cluster (pytest-django makes the test database there,
  and every process the tests start uses that test database);
- ``CELERY_BROKER_URL``: ``redis://127.0.0.1:PORT/0`` with nothing listening on PORT: each
  test starts its own Redis there (AOF on), so it can kill and restart it;
- ``FAULTS_PG_DATA`` and ``FAULTS_PG_BIN``: the cluster's data directory and the folder of
  its ``pg_ctl``, to restart it.

Without them the tests are skipped. Every wait is bounded and every process started is
stopped by a finaliser, whatever happens in the test.
"""

from __future__ import annotations

import os
from decimal import Decimal

import pytest
from django.db import connection

from annotation import services
from pooling.models import QuerySet
from pooling.services import create_query_set
from tests.faults.providers import HIT_SERVERS, PROVIDER_SERVERS
from tests.faults.servers import Postgres, Process, Redis, celery_worker, database_url, redis_port, wait_until
from tests.pooling.conftest import _kept_world, files, world  # noqa: F401  (the pool world, for the pool task)

#: Short job timings for the tests (the defaults are 10 s heartbeat, 60 s lease).
HEARTBEAT_SECONDS = 0.3
LEASE_SECONDS = 2.0

REQUIRED = ("DATABASE_URL", "CELERY_BROKER_URL", "FAULTS_PG_DATA", "FAULTS_PG_BIN")


def pytest_collection_modifyitems(config, items):
    missing = [name for name in REQUIRED if not os.environ.get(name)]
    if not missing and os.environ["DATABASE_URL"].startswith("postgres"):
        return
    skip = pytest.mark.skip(reason=f"fault tests need {', '.join(REQUIRED)} on PostgreSQL (bin/test sets them)")
    for item in items:
        if item.get_closest_marker("faults") is not None:
            item.add_marker(skip)


@pytest.fixture
def job_timing(settings):
    """The test process (sweeper) and every worker agree on short heartbeats and leases."""
    settings.JOB_HEARTBEAT_SECONDS = HEARTBEAT_SECONDS
    settings.JOB_LEASE_SECONDS = LEASE_SECONDS
    settings.JOB_SWEEP_AFTER_SECONDS = 0
    return {"JOB_HEARTBEAT_SECONDS": str(HEARTBEAT_SECONDS), "JOB_LEASE_SECONDS": str(LEASE_SECONDS)}


@pytest.fixture
def redis(tmp_path):
    """A fresh Redis with its append-only file on, where CELERY_BROKER_URL points."""
    directory = tmp_path / "redis"
    directory.mkdir()
    server = Redis(redis_port(os.environ["CELERY_BROKER_URL"]), directory)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def postgres() -> Postgres:
    return Postgres(os.environ["FAULTS_PG_DATA"], os.environ["FAULTS_PG_BIN"])


@pytest.fixture
def process_env(transactional_db, tmp_path, job_timing) -> dict[str, str]:
    """The environment of every process a test starts: the test database, its own VAR_DIR."""
    var = tmp_path / "var"
    var.mkdir()
    return {
        **os.environ,
        "DATABASE_URL": database_url(connection.settings_dict),
        "VAR_DIR": str(var),
        "LOG_LEVEL": "INFO",
        "PYTHONUNBUFFERED": "1",
        **job_timing,
    }


@pytest.fixture
def start_workers(process_env, tmp_path, redis):
    """``start_workers(n, env)``: n real Celery workers (prefork, one process each), ready to consume."""
    started: list[Process] = []

    def start(n: int = 2, env: dict[str, str] | None = None) -> list[Process]:
        batch = []
        for _ in range(n):
            name = f"faults-{len(started) + 1}"
            worker = celery_worker(name, {**process_env, **(env or {})}, tmp_path / f"{name}.log").start()
            started.append(worker)
            batch.append(worker)
        for worker in batch:
            wait_until(lambda w=worker: " ready." in w.output() or not w.alive(), 60, f"{worker.name} to be ready")
            assert worker.alive(), worker.output()
        return batch

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture(params=HIT_SERVERS)
def provider_server(request):
    """Each HIT-making provider's compatible test server in turn (see providers.py)."""
    server = PROVIDER_SERVERS[request.param]()
    yield server
    server.stop()


@pytest.fixture(params=sorted(PROVIDER_SERVERS))
def any_provider_server(request):
    """Every provider's compatible test server in turn, Prolific included (see providers.py)."""
    server = PROVIDER_SERVERS[request.param]()
    yield server
    server.stop()


@pytest.fixture
def make_batches(transactional_db):
    """``make_batches(provider, n, hits)``: n batches of ``hits`` one-query HITs each, not published."""

    def make(provider: str, n: int, hits: int, assignments: int = 1, options: dict | None = None):
        texts = [(f"{b}-{i}", f"query {b} {i}") for b in range(n) for i in range(hits)]
        query_sets = [
            create_query_set(f"qs-{b}", [t for t in texts if t[0].startswith(f"{b}-")], origin=QuerySet.Origin.IMPORTED)
            for b in range(n)
        ]
        settings = services.BatchSettings(
            provider=provider,
            assignments_per_query=assignments,
            queries_per_hit=1,
            reward=Decimal("0.05"),
            provider_options=options or {},
        )
        return [services.create_batch(f"batch-{b}", settings, query_set=qs) for b, qs in enumerate(query_sets)]

    return make


def assert_one_hit_per_group(server, batches) -> None:
    """Every local group (HIT, or a Prolific batch) is recorded with one remote object, made for it, and no group has two."""
    on_server = server.made()
    expected = server.recorded(batches)
    made = sorted(on_server.values())
    assert len(made) == len(set(made)), f"a group has more than one HIT: {made}"
    assert set(made) == set(expected), "the server's HITs are not one per local HIT"
    wrong = {group: pid for group, pid in expected.items() if on_server.get(pid) != group}
    assert not wrong, f"local HITs recorded with no HIT, or another group's: {wrong}"

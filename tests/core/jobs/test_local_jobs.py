"""Jobs without a broker (core.jobs.in_process): run in the background of the process that starts them.

The default setup (``bin/demo``, runserver, gunicorn; no ``CELERY_BROKER_URL``) once left
every job started from a page ``pending`` for good: request threads fell back to Celery's
unconfigured default app, which sent to amqp://localhost. The first tests drive exactly
that setup: a real ``manage.py runserver`` on its own SQLite file, default settings. The
tests that watch the background threads from inside the process (pytest-django's threaded
``live_server``, like runserver) need a database that several threads open at once: the
suite's in-memory SQLite is one shared-cache database whose concurrent writers fail with
"database table is locked", so they run in bin/test's PostgreSQL stage.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path

import pytest
import requests
from django.db import transaction
from django.utils import timezone

from annotation import services as annotation_services
from annotation.crowd.services import background as annotation_background
from annotation.models import Batch
from core.jobs import start_job
from core.jobs.sweeper import sweep_jobs
from core.models import Job
from core.services.api_tokens import api_token
from core.tasks import task_for, worker_identity
from pooling.models import QuerySet
from pooling.services import create_query_set
from pooling.services import imports as pooling_imports
from tests.faults.servers import Process, port_open
from tests.loopback import free_port

publish_batch_task = task_for("annotation.publish")

ROOT = Path(__file__).resolve().parents[3]
FINISHED = ("done", "failed")


def wait_for(condition, timeout: float = 30, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(interval)
    raise AssertionError(f"not within {timeout} s")


def poll_job(session: requests.Session, base: str, job_id: int, timeout: float = 60) -> dict:
    def finished():
        job = session.get(f"{base}/api/jobs/{job_id}/", timeout=10).json()
        return job if job["status"] in FINISHED else None

    return wait_for(finished, timeout, interval=0.1)


def job_id(response: requests.Response) -> int:
    body = response.json()
    return body["id"] if "id" in body else body["job"]  # imports answer the job, batch actions name it


def query_file(i: int) -> bytes:
    return "".join(f"{i}{n}\tquery {i} {n}\n" for n in range(3)).encode()


SERVER_SETUP = """
import django
django.setup()
from django.contrib.auth import get_user_model
from django.core.management import call_command
from core.services.api_tokens import api_token
from annotation import services
from pooling.models import QuerySet
from pooling.services import create_query_set
call_command("migrate", verbosity=0)
researcher = get_user_model().objects.create_user("researcher", password="pw-secret-123", is_staff=True)
query_set = create_query_set("gq", [("1", "who is she"), ("2", "who is he")], origin=QuerySet.Origin.IMPORTED)
services.create_batch(
    "b1", services.BatchSettings(provider="local", assignments_per_query=1, queries_per_hit=1), query_set=query_set
)
print(api_token(researcher))
"""


def default_environment(tmp_path: Path) -> dict[str, str]:
    """The environment of ``bin/demo``'s server: no broker, the default job runner, an SQLite file."""
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "VAR_DIR": str(tmp_path)}
    for name in ("CELERY_BROKER_URL", "JOB_LOCAL_RUNNER"):
        env.pop(name, None)
    return {**env, "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONPATH": str(ROOT)}


@pytest.fixture
def runserver(tmp_path):
    """``manage.py runserver`` (threaded) in the default setup; yields ``(session, base URL)``."""
    env = default_environment(tmp_path)
    setup = subprocess.run(
        [sys.executable, "-c", SERVER_SETUP], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert setup.returncode == 0, setup.stderr
    port = free_port()
    server = Process(
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        env,
        tmp_path / "runserver.log",
        "runserver",
    ).start()
    try:
        wait_for(lambda: port_open(port) or not server.alive(), 60, interval=0.1)
        assert server.alive(), server.output()
        session = requests.Session()
        session.headers["Authorization"] = f"Token {setup.stdout.split()[-1]}"
        yield session, f"http://127.0.0.1:{port}"
    finally:
        server.stop()
    assert "unreachable" not in server.output()


@pytest.mark.embedded
@pytest.mark.slow
def test_jobs_started_at_once_on_runserver_without_a_broker_all_finish(runserver):
    """Three imports and a publish started through the API at once reach ``done``; a bad file's
    import ends ``failed`` with its line. (Old: the publish, from a request thread, went to
    Celery's default app and stayed ``pending``; ``the broker is unreachable`` in the log.)"""
    session, base = runserver

    def start(what: str) -> requests.Response:
        if what == "publish":
            return session.post(f"{base}/api/annotation/batches/b1/publish/", timeout=30)
        content = b"1\twho is she\nnot a query line\n" if what == "bad" else query_file(int(what[1]))
        files = {"file": (f"{what}.tsv", content)}
        return session.post(f"{base}/api/pooling/imports/queries/", data={"name": what}, files=files, timeout=30)

    what = ["q1", "q2", "q3", "publish", "bad"]
    with ThreadPoolExecutor(len(what)) as clients:
        responses = dict(zip(what, clients.map(start, what), strict=True))
    assert {what: r.status_code for what, r in responses.items()} == dict.fromkeys(responses, 202)

    finished = {what: poll_job(session, base, job_id(r)) for what, r in responses.items()}

    statuses = {what: job["status"] for what, job in finished.items()}
    assert statuses == {"q1": "done", "q2": "done", "q3": "done", "publish": "done", "bad": "failed"}, finished
    assert finished["publish"]["result"]["published"] == 2
    assert "bad.tsv" in finished["bad"]["message"] and ":2" in finished["bad"]["message"]


@pytest.fixture
def background(settings):
    """Jobs committed by requests and by the test run on the process's background threads, as deployed."""
    settings.JOB_LOCAL_RUNNER = "threads"
    settings.JOB_HEARTBEAT_SECONDS = 0.1


@pytest.fixture
def gate(monkeypatch):
    """``gate(module, name)`` makes ``module.name`` wait until ``gate.open`` is set (at most 30 s)."""

    class Gate:
        open = threading.Event()

        def __call__(self, module, name):
            real = getattr(module, name)

            def gated(*args, **kwargs):
                if not self.open.wait(30):
                    raise RuntimeError("the gate was never opened")
                return real(*args, **kwargs)

            monkeypatch.setattr(module, name, gated)

    gate = Gate()
    yield gate
    gate.open.set()  # never leave a job thread waiting


@pytest.fixture
def api(live_server, django_user_model):
    """A ``requests`` session authenticated as a researcher against the live server."""
    researcher = django_user_model.objects.create_user("researcher", password="pw-secret-123", is_staff=True)
    session = requests.Session()
    session.headers["Authorization"] = f"Token {api_token(researcher)}"
    session.base = live_server.url
    return session


@pytest.mark.postgresql
def test_three_imports_started_at_once_through_the_api_finish_in_the_background(background, api, gate):
    """The requests answer while the imports are held back (old: each request ran its import
    inline, here for good); released, all three reach ``done``, polled through the API."""
    gate(pooling_imports, "import_file")  # where the import job finds it
    uploads = {f"q{i}": query_file(i) for i in range(1, 4)}

    def start(name: str) -> requests.Response:
        files = {"file": (f"{name}.tsv", uploads[name])}
        return api.post(f"{api.base}/api/pooling/imports/queries/", data={"name": name}, files=files, timeout=20)

    with ThreadPoolExecutor(3) as clients:
        responses = list(clients.map(start, uploads))
    assert [r.status_code for r in responses] == [202] * 3, [r.content for r in responses]
    started = [r.json() for r in responses]
    assert {job["status"] for job in started} <= {"pending", "running"}
    assert not gate.open.is_set()  # every request answered while its import was still held

    gate.open.set()
    finished = [poll_job(api, api.base, job["id"]) for job in started]

    assert [job["status"] for job in finished] == ["done"] * 3, finished
    for job in Job.objects.filter(pk__in=[j["id"] for j in started]):
        assert (job.attempts, job.worker) == (1, worker_identity())  # this process, once
    assert sorted(QuerySet.objects.values_list("name", flat=True)) == ["q1", "q2", "q3"]


@pytest.mark.postgresql
def test_a_batch_published_through_the_api_runs_with_the_configured_app(background, api):
    """Annotation's tasks once went, from a request thread, to Celery's unconfigured default app
    ("the broker is unreachable"), and the job stayed pending."""
    query_set = create_query_set("gq", [("1", "who is she"), ("2", "who is he")], origin=QuerySet.Origin.IMPORTED)
    annotation_services.create_batch(
        "b1",
        annotation_services.BatchSettings(provider="local", assignments_per_query=1, queries_per_hit=1),
        query_set=query_set,
    )
    response = api.post(f"{api.base}/api/annotation/batches/b1/publish/", timeout=20)
    assert response.status_code == 202, response.content

    job = poll_job(api, api.base, job_id(response))

    assert job["status"] == "done", job
    assert Batch.objects.get(name="b1").status == Batch.Status.PUBLISHED


@pytest.fixture
def batch(transactional_db) -> Batch:
    query_set = create_query_set(
        "gq", [("1", "what is a synapse"), ("2", "who is she"), ("3", "who is he")], origin=QuerySet.Origin.IMPORTED
    )
    return annotation_services.create_batch(
        "b1",
        annotation_services.BatchSettings(
            provider="local", assignments_per_query=2, queries_per_hit=1, reward=Decimal("0.05")
        ),
        query_set=query_set,
    )


@pytest.mark.postgresql
def test_a_background_job_leaves_the_committer_at_once_and_stamps_its_heartbeat(background, batch, gate):
    gate(annotation_background, "publish_batch")  # where the publish job finds it
    with transaction.atomic():
        job = start_job(publish_batch_task, "annotation.publish", "Publish b1", batch.pk)
    # The commit returned with the work still held back.
    running = wait_for(lambda: Job.objects.filter(pk=job.pk, status="running").first())
    assert running.worker == worker_identity()
    wait_for(lambda: Job.objects.get(pk=job.pk).heartbeat > running.heartbeat)  # stamped while it runs

    gate.open.set()
    job = wait_for(lambda: Job.objects.filter(pk=job.pk, status__in=FINISHED).first())

    assert (job.status, job.attempts, job.result["published"]) == ("done", 1, 3)


@pytest.mark.postgresql
def test_a_background_job_that_raises_ends_failed_with_its_message(background, batch, caplog):
    Batch.objects.filter(pk=batch.pk).update(status=Batch.Status.CANCELLED)

    with transaction.atomic():
        job = start_job(publish_batch_task, "annotation.publish", "Publish b1", batch.pk)
    job = wait_for(lambda: Job.objects.filter(pk=job.pk, status__in=FINISHED).first())

    assert job.status == "failed"
    assert "cancelled; it cannot be published" in job.message
    wait_for(lambda: any(f"job {job.pk} failed" in r.getMessage() and r.exc_info for r in caplog.records))


@pytest.mark.postgresql
def test_the_same_job_delivered_twice_in_one_process_is_carried_out_once(background, batch, gate):
    """Two threads of one process deliver the same Job: the second stands down (the worker
    identity ``host:pid`` is the same for both, so the claim alone would not tell them apart)."""
    from core.tasks import send_job

    gate(annotation_background, "publish_batch")  # where the publish job finds it
    with transaction.atomic():
        job = start_job(publish_batch_task, "annotation.publish", "Publish b1", batch.pk)
    wait_for(lambda: Job.objects.filter(pk=job.pk, status="running").exists())
    assert send_job(Job.objects.get(pk=job.pk))  # the second delivery, on the other thread
    time.sleep(0.3)

    gate.open.set()
    job = wait_for(lambda: Job.objects.filter(pk=job.pk, status__in=FINISHED).first())

    assert (job.status, job.attempts) == ("done", 1)
    assert batch.hits.filter(provider_id=None).count() == 0


def test_a_command_runs_the_job_it_starts_before_it_returns_whatever_the_runner(batch, settings, capsys):
    """``publish_batch --queue`` without a broker: the job is done when the command ends (a
    background thread would die with the process, and the command reports the outcome)."""
    from django.core.management import call_command

    settings.JOB_LOCAL_RUNNER = "threads"
    call_command("publish_batch", "b1", "--queue")

    job = Job.objects.get(kind="annotation.publish")
    assert (job.status, job.attempts, job.worker) == ("done", 1, worker_identity())
    assert f"Queued as job {job.pk}" in capsys.readouterr().out


def test_a_thread_that_never_made_an_app_sees_the_configured_one(db):
    """Celery's current app is per thread; one that never set it (a request thread) gets the default."""
    from celery import current_app

    from config.celery import app

    seen = {}

    def look():
        seen["current"] = current_app._get_current_object()
        seen["task_app"] = publish_batch_task.app

    thread = threading.Thread(target=look)
    thread.start()
    thread.join()

    assert seen["current"] is app and seen["task_app"] is app
    assert seen["current"].conf.task_always_eager  # configured: no broker in this suite's default


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_the_sweeper_runs_again_a_job_whose_process_died_without_waiting_for_the_lease(batch, settings):
    """Its heartbeat is fresh, but the process named by ``host:pid`` (this host) is gone: a web
    server killed mid-job. Without a broker the sweeper runs it again here."""
    host = worker_identity().rpartition(":")[0]
    job = Job.objects.create(
        kind="annotation.publish",
        task=publish_batch_task.name,
        arguments=[batch.pk],
        status="running",
        worker=f"{host}:{dead_pid()}",
        heartbeat=timezone.now(),
        attempts=1,
    )
    alive = Job.objects.create(
        kind="annotation.publish",
        task=publish_batch_task.name,
        arguments=[batch.pk],
        status="running",
        worker="elsewhere:1",
        heartbeat=timezone.now(),
        attempts=1,
    )

    sweep = sweep_jobs()

    assert sweep.resent_running == [job.pk]
    job.refresh_from_db()
    assert (job.status, job.attempts, job.worker) == ("done", 2, worker_identity())
    assert Job.objects.get(pk=alive.pk).status == "running"  # another host's, heartbeat fresh: left alone


SWEEP_PROBE = """
import json, subprocess, sys
from decimal import Decimal
import django
django.setup()
from django.core.management import call_command
from django.utils import timezone
call_command("migrate", verbosity=0)
from annotation import services
from core.models import Job
from pooling.models import QuerySet
from pooling.services import create_query_set

query_set = create_query_set("gq", [("1", "who is she"), ("2", "who is he")], origin=QuerySet.Origin.IMPORTED)
batch = services.create_batch(
    "b1", services.BatchSettings(provider="local", assignments_per_query=1, queries_per_hit=1), query_set=query_set
)
gone = subprocess.Popen([sys.executable, "-c", "pass"])
gone.wait()
host = __import__("socket").gethostname()
jobs = {
    "annotation.tasks.publish_batch_task": [batch.pk],
    "pooling.tasks.import_task": ["queries", "/nonexistent/q.tsv", "q", {}, False],
    "metrics.tasks.crbo_task": [999, 998, 10, 0.9],
}
ids = {}
for task, arguments in jobs.items():
    ids[task] = Job.objects.create(kind=task, task=task, arguments=arguments).pk
Job.objects.filter(pk=ids["annotation.tasks.publish_batch_task"]).update(
    status="running", worker=f"{host}:{gone.pid}", heartbeat=timezone.now(), attempts=1
)
assert "celery" not in sys.modules  # as in a fresh `manage.py sweep_jobs`: nothing loaded Celery yet
call_command("sweep_jobs")
print(json.dumps({task: list(Job.objects.filter(pk=pk).values_list("status", "attempts", "message")[0])
                  for task, pk in ids.items()}))
"""


@pytest.mark.slow
@pytest.mark.embedded
def test_sweep_jobs_in_a_fresh_process_without_a_broker_runs_every_apps_tasks(tmp_path):
    """``manage.py sweep_jobs`` once crashed with ``NotRegistered`` (Celery's default app, which
    knows no task). Each app's task runs: the publish taken over from its dead process is done,
    the others fail on their made-up arguments with their message; the sweep goes on."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "PYTHONPATH": str(ROOT),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "VAR_DIR": str(tmp_path),
        "JOB_LOCAL_RUNNER": "threads",  # a command runs its jobs inline whatever the process's runner
    }
    env.pop("CELERY_BROKER_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", SWEEP_PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome["annotation.tasks.publish_batch_task"][:2] == ["done", 2]
    assert (
        outcome["pooling.tasks.import_task"][0] == "failed"
        and "/nonexistent/q.tsv" in outcome["pooling.tasks.import_task"][2]
    )
    assert outcome["metrics.tasks.crbo_task"][0] == "failed" and outcome["metrics.tasks.crbo_task"][2]
    assert "Sent again: 2 pending job(s)" in done.stdout and "1 abandoned running job(s)" in done.stdout

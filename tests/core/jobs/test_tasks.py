"""The Job task wrapper (core.tasks) and the sweeper (core.jobs.sweeper), with eager Celery.

The effect watched is publishing a local batch: a delivery that works gives every HIT a
provider id; a delivery that must do nothing leaves the HIT that was reset unpublished.
Real workers, brokers and kills are in tests/faults.
"""

import subprocess
import sys
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone

from annotation import services
from annotation.models import Batch, Hit
from config.celery import app
from core.jobs import start_job
from core.jobs.sweeper import sweep_jobs
from core.models import Job
from core.tasks import send_job, task_for, worker_identity
from pooling.models import QuerySet
from pooling.services import create_query_set

publish_batch_task = task_for("annotation.publish")


@pytest.fixture
def batch(db) -> Batch:
    query_set = create_query_set(
        "gq", [("1", "what is a synapse"), ("2", "who is she"), ("3", "who is he")], origin=QuerySet.Origin.IMPORTED
    )
    return services.create_batch(
        "b1",
        services.BatchSettings(provider="local", assignments_per_query=2, queries_per_hit=1, reward=Decimal("0.05")),
        query_set=query_set,
    )


def unpublished(batch: Batch) -> int:
    return batch.hits.filter(provider_id=None).count()


def publish_job(batch: Batch, **fields) -> Job:
    """A recorded publish Job, not sent (as if its message were in flight or lost)."""
    fields = {"status": "pending", **fields}
    return Job.objects.create(kind="annotation.publish", task=publish_batch_task.name, arguments=[batch.pk], **fields)


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_start_job_records_the_task_and_runs_it_after_the_commit(batch, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        job = start_job(publish_batch_task, "annotation.publish", "Publish b1", batch.pk)
        assert (job.status, job.task, job.arguments) == ("pending", "annotation.tasks.publish_batch_task", [batch.pk])
        assert unpublished(batch) == 3  # nothing before the commit
    assert len(callbacks) == 1
    job.refresh_from_db()
    assert (job.status, job.attempts, job.result["published"]) == ("done", 1, 3)
    assert job.worker == worker_identity() and job.message_id and job.queued is not None
    assert unpublished(batch) == 0


def test_a_finished_job_delivered_again_does_nothing(batch):
    job = publish_job(batch)
    publish_batch_task.apply((job.pk, batch.pk))
    Hit.objects.filter(batch=batch, position=1).update(provider_id=None)

    publish_batch_task.apply((job.pk, batch.pk))

    job.refresh_from_db()
    assert (job.status, job.attempts) == ("done", 1)
    assert unpublished(batch) == 1


def test_a_job_held_by_a_live_claimer_is_left_to_it(batch):
    job = publish_job(batch, status="running", worker="elsewhere:4242", heartbeat=timezone.now(), attempts=1)

    publish_batch_task.apply((job.pk, batch.pk))

    job.refresh_from_db()
    assert (job.status, job.attempts, job.worker) == ("running", 1, "elsewhere:4242")
    assert unpublished(batch) == 3


@pytest.mark.parametrize(
    "claimer",
    ["silent elsewhere (heartbeat older than the lease)", "a dead process on this host"],
)
def test_a_job_whose_claimer_is_gone_is_taken_over(batch, settings, claimer):
    if claimer.startswith("silent"):
        held = {"worker": "elsewhere:4242", "heartbeat": timezone.now() - timedelta(seconds=settings.JOB_LEASE_SECONDS)}
    else:
        held = {"worker": f"{worker_identity().rpartition(':')[0]}:{dead_pid()}", "heartbeat": timezone.now()}
    job = publish_job(batch, status="running", attempts=1, **held)

    publish_batch_task.apply((job.pk, batch.pk))

    job.refresh_from_db()
    assert (job.status, job.attempts, job.worker) == ("done", 2, worker_identity())
    assert job.redelivered
    assert unpublished(batch) == 0


def test_a_failing_job_is_recorded_failed_with_its_message(batch):
    Batch.objects.filter(pk=batch.pk).update(status=Batch.Status.CANCELLED)
    job = publish_job(batch)

    with pytest.raises(Exception, match="cancelled; it cannot be published"):
        publish_batch_task.apply((job.pk, batch.pk))

    job.refresh_from_db()
    assert job.status == "failed"
    assert "cancelled; it cannot be published" in job.message


def test_the_sweeper_sends_again_only_stuck_jobs(batch, settings):
    now = timezone.now()
    long_ago = now - timedelta(seconds=settings.JOB_SWEEP_AFTER_SECONDS + 1)
    lost = publish_job(batch, queued=long_ago, message_id="lost")
    just_sent = publish_job(batch, queued=now, message_id="in-flight")
    abandoned = publish_job(
        batch,
        status="running",
        worker="elsewhere:1",
        attempts=1,
        heartbeat=now - timedelta(seconds=settings.JOB_LEASE_SECONDS + 1),
    )
    alive = publish_job(batch, status="running", worker="elsewhere:2", attempts=1, heartbeat=now)
    Hit.objects.filter(batch=batch).update(provider_id=None)

    sweep = sweep_jobs()

    assert sweep.resent_pending == [lost.pk]
    assert sweep.resent_running == [abandoned.pk]
    state = {pk: (status, attempts) for pk, status, attempts in Job.objects.values_list("pk", "status", "attempts")}
    assert state == {
        lost.pk: ("done", 1),
        just_sent.pk: ("pending", 0),
        abandoned.pk: ("done", 2),  # taken over from its silent claimer
        alive.pk: ("running", 1),
    }
    assert unpublished(batch) == 0


def test_sweep_jobs_command_reports_what_it_sent(batch, settings, capsys):
    job = publish_job(batch, queued=None)
    call_command("sweep_jobs")
    assert "Sent again: 1 pending job(s)" in capsys.readouterr().out
    job.refresh_from_db()
    assert job.status == "done"


@pytest.fixture
def unreachable_broker():
    """A real (non-eager) Celery configuration whose broker refuses connections."""
    conf = app.conf
    keys = ("task_always_eager", "broker_url", "task_publish_retry_policy", "broker_transport_options")
    saved = {key: conf[key] for key in keys}
    conf.task_always_eager = False
    conf.broker_url = "redis://127.0.0.1:9/0"
    once = {"max_retries": 1, "interval_start": 0, "interval_step": 0, "interval_max": 0}
    conf.task_publish_retry_policy = once
    # The sweeper's connection retries by the transport's options: kombu's default waited 1 s six times.
    conf.broker_transport_options = {**(conf.broker_transport_options or {}), **once}
    _forget_connections()
    yield
    for key, value in saved.items():
        conf[key] = value
    _forget_connections()


def _forget_connections() -> None:
    app._pool = None
    app.amqp._producer_pool = None


@pytest.mark.slow
def test_a_job_whose_message_cannot_be_sent_stays_pending_for_the_sweeper(
    batch, settings, unreachable_broker, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        job = start_job(publish_batch_task, "annotation.publish", "Publish b1", batch.pk)
    job.refresh_from_db()
    assert job.status == "pending" and job.message_id and job.queued is not None
    assert send_job(job) is False
    settings.JOB_SWEEP_AFTER_SECONDS = 0
    with pytest.raises(Exception, match="the broker cannot be reached"):
        call_command("sweep_jobs", verbosity=0)


def test_an_expected_failure_fails_the_job_without_raising(db, tmp_path):
    """The import job is declared with failures=(InputError, ServiceError, OSError): bad input fails the Job
    quietly (the page shows it; eagerly, the request that started it must not break), and an
    uploaded file that was not imported is removed."""
    import_task = task_for("import")

    upload = tmp_path / "queries.tsv"
    upload.write_text("1\twho is she\nnot a query line\n")
    job = Job.objects.create(kind="import", task=import_task.name, arguments=[])

    import_task.apply((job.pk, "queries", str(upload), "q1", {}, True))

    job.refresh_from_db()
    assert job.status == "failed"
    assert "queries.tsv" in job.message and ":2" in job.message  # the file and the line
    assert not upload.exists()
    assert not QuerySet.objects.filter(name="q1").exists()


# --- JOB_MAX_ATTEMPTS: a job whose worker dies each time is failed, not sent again forever (issue 82) ---


def assert_failed_after_its_last_attempt(job: Job, attempts: int) -> None:
    """What a researcher must read (issue 82): which attempts, that the worker died each time,
    the likely cause, and what to do."""
    assert (job.status, job.attempts) == ("failed", attempts)
    for words in (f"attempts 1 to {attempts}", "died", "killed by the system", "memory", "smaller input"):
        assert words in job.message, (words, job.message)


@pytest.mark.parametrize(
    "claimer", ["a dead process on this host", "silent elsewhere (heartbeat older than the lease)"]
)
def test_a_job_at_its_last_attempt_whose_worker_died_is_failed_with_the_reason_not_sent_again(batch, settings, claimer):
    settings.JOB_MAX_ATTEMPTS = 3
    if claimer.startswith("silent"):
        held = {"worker": "elsewhere:4242", "heartbeat": timezone.now() - timedelta(seconds=settings.JOB_LEASE_SECONDS)}
    else:
        held = {"worker": f"{worker_identity().rpartition(':')[0]}:{dead_pid()}", "heartbeat": timezone.now()}
    job = publish_job(batch, status="running", attempts=3, message_id="the-last", **held)

    sweep = sweep_jobs()

    assert (sweep.failed, sweep.resent) == ([job.pk], [])
    job.refresh_from_db()
    assert_failed_after_its_last_attempt(job, 3)
    assert job.message_id == "the-last"  # no new message
    assert unpublished(batch) == 3  # not run again

    assert sweep_jobs().failed == []  # and the next sweep leaves it alone


def test_a_job_under_its_attempts_whose_worker_died_is_still_sent_again(batch, settings):
    settings.JOB_MAX_ATTEMPTS = 3
    host = worker_identity().rpartition(":")[0]
    job = publish_job(batch, status="running", attempts=2, worker=f"{host}:{dead_pid()}", heartbeat=timezone.now())

    sweep = sweep_jobs()

    assert (sweep.resent_running, sweep.failed) == ([job.pk], [])
    job.refresh_from_db()
    assert (job.status, job.attempts, job.worker) == ("done", 3, worker_identity())
    assert unpublished(batch) == 0


def test_a_late_delivery_of_a_job_past_its_attempts_fails_it_instead_of_starting_it(batch, settings):
    """A message delivered again after the claimer of the last attempt died (a worker's pool
    process killed: ``task_reject_on_worker_lost`` puts it back at once) fails the Job, with the
    same words as the sweeper."""
    settings.JOB_MAX_ATTEMPTS = 2
    host = worker_identity().rpartition(":")[0]
    job = publish_job(batch, status="running", attempts=2, worker=f"{host}:{dead_pid()}", heartbeat=timezone.now())

    publish_batch_task.apply((job.pk, batch.pk))

    job.refresh_from_db()
    assert_failed_after_its_last_attempt(job, 2)
    assert unpublished(batch) == 3


def test_a_job_this_process_claimed_is_no_death_and_is_taken_again(batch, settings):
    """A retry after a lost database connection whose hand-back failed finds the Job still claimed
    by its own process: that claimer did not die, so its attempts do not stop it."""
    settings.JOB_MAX_ATTEMPTS = 1
    job = publish_job(batch, status="running", attempts=1, worker=worker_identity(), heartbeat=timezone.now())

    publish_batch_task.apply((job.pk, batch.pk))

    job.refresh_from_db()
    assert (job.status, job.attempts) == ("done", 2)


def test_sweep_jobs_command_reports_the_jobs_it_failed(batch, settings, capsys):
    settings.JOB_MAX_ATTEMPTS = 1
    job = publish_job(batch, status="running", attempts=1, worker="elsewhere:1", heartbeat=None)
    Job.objects.filter(pk=job.pk).update(updated=timezone.now() - timedelta(seconds=settings.JOB_LEASE_SECONDS + 1))

    call_command("sweep_jobs")

    assert f"failed after their last attempt: 1 job(s) [{job.pk}]" in capsys.readouterr().out
    assert Job.objects.get(pk=job.pk).status == "failed"


def test_only_the_sweep_jobs_command_sweeps_so_no_request_runs_a_job_sent_again():
    """Without a broker a sweep runs what it sends inline in its own process: a request that swept
    would wait on (or die with) that work. Only ``manage.py sweep_jobs`` may call the sweeper."""
    root = Path(__file__).resolve().parents[3]
    callers = {
        str(path.relative_to(root))
        for app in ("core", "pooling", "annotation", "metrics", "platforms", "publishing", "config", "benchmarks")
        for path in (root / app).rglob("*.py")
        if "sweep_jobs(" in path.read_text() or "core.jobs.sweeper import" in path.read_text()
    }
    # hostile_round's checks are run by a command too: round seven sweeps a job at its last attempt (no request)
    commands = {"core/management/commands/sweep_jobs.py", "benchmarks/hostile_findings_82.py"}
    assert callers <= {*commands, "core/jobs/sweeper.py"}, callers

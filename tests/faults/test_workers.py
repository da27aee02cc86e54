"""Workers killed mid-task, and one job delivered twice at once: every job's effect exactly once.

Publishing is the effect watched: it talks to the provider's test server, which counts
every HIT made and every create request received.
"""

from __future__ import annotations

import os
import signal

import pytest
from django.db import transaction

from core.jobs import start_job
from core.jobs.sweeper import sweep_jobs
from core.models import Job
from core.tasks import send_job, task_for
from pooling.models import Pool, QuerySet, Run
from tests.faults.conftest import assert_one_hit_per_group
from tests.faults.servers import parent_pid, wait_until

publish_batch_task = task_for("annotation.publish")
build_pool_task = task_for("pool")

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]


def _start_publishing(batches) -> list[Job]:
    with transaction.atomic():
        return [start_job(publish_batch_task, "annotation.publish", f"Publish {b.name}", b.pk) for b in batches]


def _all_finished(jobs: list[Job], sweep: bool) -> bool:
    """Whether every job is done or failed; runs the sweeper first, as cron would every minute."""
    if sweep:
        sweep_jobs()
    return all(job.status in ("done", "failed") for job in Job.objects.filter(pk__in=[j.pk for j in jobs]))


@pytest.mark.parametrize("victim", ["pool process", "whole worker"])
def test_a_worker_killed_mid_task_leaves_every_effect_exactly_once(
    victim, provider_server, make_batches, start_workers
):
    """Pass: every job done; one provider HIT per local HIT; the killed job redelivered (attempts 2).

    Killing the pool process running a task, its worker puts the message back at once
    (``task_reject_on_worker_lost``); killing the whole worker (a lost machine) leaves the
    message unacknowledged, and the sweeper sends the job again once its heartbeat stops.
    """
    provider_server.slow(0.2)
    batches = make_batches(provider_server.provider, n=3, hits=4)
    workers = start_workers(2, provider_server.env)
    jobs = _start_publishing(batches)

    running = wait_until(
        lambda: Job.objects.filter(pk__in=[j.pk for j in jobs], status="running", done__gte=1).first(),
        30,
        "a job to publish its first HIT",
        interval=0.05,
    )
    pid = int(running.worker.rpartition(":")[2])
    if victim == "pool process":
        os.kill(pid, signal.SIGKILL)
    else:
        owner = next(w for w in workers if w.pid == parent_pid(pid))
        owner.kill9()

    wait_until(lambda: _all_finished(jobs, sweep=victim == "whole worker"), 60, "every job to finish", interval=0.5)

    statuses = dict(Job.objects.filter(pk__in=[j.pk for j in jobs]).values_list("pk", "status"))
    assert set(statuses.values()) == {"done"}, statuses
    assert Job.objects.get(pk=running.pk).attempts == 2
    assert_one_hit_per_group(provider_server, batches)


@pytest.mark.parametrize("work", ["publish", "pool"])
def test_the_same_job_delivered_twice_at_once_has_one_effect(
    work, provider_server, make_batches, start_workers, world, tmp_path
):
    """Pass: both deliveries reached a worker, one did the work (attempts 1), one did nothing.

    Publishing: one create request per HIT (a second publisher would have asked again for
    each); pooling: one pool, and the job done (a second builder would fail on the name).
    """
    provider_server.slow(0.2)
    workers = start_workers(2, provider_server.env)
    if work == "publish":
        [batch] = make_batches(provider_server.provider, n=1, hits=4)
        task, arguments = publish_batch_task, [batch.pk]
    else:
        runs = list(Run.objects.order_by("name").values_list("pk", flat=True))
        task = build_pool_task
        arguments = [
            "twice",
            QuerySet.objects.get(name="q").pk,
            runs,
            {"rank_cutoff": 2, "depth": 1, "magnitude": "tf", "tokenizer": "words"},
        ]
    with transaction.atomic():
        job = start_job(task, work, "twice at once", *arguments)
    first = wait_until(lambda: Job.objects.get(pk=job.pk).message_id, 10, "the first message")
    assert send_job(Job.objects.get(pk=job.pk))
    second = Job.objects.get(pk=job.pk).message_id

    wait_until(lambda: Job.objects.get(pk=job.pk).status in ("done", "failed"), 60, "the job to finish")
    wait_until(
        lambda: all(any(f"[{m}] received" in w.output() for w in workers) for m in (first, second)),
        20,
        "both deliveries to reach a worker",
    )
    job.refresh_from_db()
    assert (job.status, job.attempts) == ("done", 1), job.message
    if work == "publish":
        assert provider_server.create_calls() == batch.hits.count()
        assert_one_hit_per_group(provider_server, [batch])
    else:
        assert list(Pool.objects.values_list("name", flat=True)) == ["twice"]
    wait_until(
        lambda: any("this delivery does nothing" in w.output() or "at the same moment" in w.output() for w in workers),
        10,
        "the other delivery to stand down",
    )

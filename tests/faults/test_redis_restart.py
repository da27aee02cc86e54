"""Redis restarted with tasks queued: none lost, and the sweeper sends what no broker holds.

Redis runs with its append-only file on (``appendfsync always``) and is killed with
``kill -9``, the harshest restart. Jobs started while it is down are committed but their
messages cannot be sent: the request still succeeds, and the sweeper sends them later.
"""

from __future__ import annotations

import pytest
from django.db import transaction

from core.jobs import start_job
from core.jobs.sweeper import broker_messages, sweep_jobs
from core.models import Job
from core.tasks import task_for
from tests.faults.conftest import assert_one_hit_per_group
from tests.faults.servers import wait_until

publish_batch_task = task_for("annotation.publish")

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]


def _start(batches) -> list[Job]:
    with transaction.atomic():
        jobs = [start_job(publish_batch_task, "annotation.publish", f"Publish {b.name}", b.pk) for b in batches]
    return [Job.objects.get(pk=job.pk) for job in jobs]


def test_a_redis_restart_loses_no_queued_task_and_the_sweeper_sends_the_unsent(
    redis, provider_server, make_batches, start_workers
):
    """Pass: the queued messages survive the restart; the sweeper sends exactly the jobs
    whose message never reached Redis (and not the queued ones); then every job is done
    once (one attempt each) and every group has one HIT. Running workers ride out a
    second restart: a job started after it is done without restarting them."""
    batches = make_batches(provider_server.provider, n=6, hits=2)

    queued = _start(batches[:3])  # no worker yet: they wait in Redis
    redis.kill9()
    unsent = _start(batches[3:5])  # the broker is down: committed, not sent
    redis.start()

    held = broker_messages()
    assert {job.message_id for job in queued} <= held.queued, "a queued message was lost in the restart"
    assert not {job.message_id for job in unsent} & (held.queued | held.reserved)

    sweep = sweep_jobs()
    assert sorted(sweep.resent_pending) == sorted(job.pk for job in unsent)
    assert sorted(sweep.held) == sorted(job.pk for job in queued)

    start_workers(2, provider_server.env)
    ids = [job.pk for job in queued + unsent]
    wait_until(lambda: not Job.objects.filter(pk__in=ids).exclude(status="done").exists(), 60, "every job done")
    assert set(Job.objects.filter(pk__in=ids).values_list("attempts", flat=True)) == {1}

    redis.restart()
    [late] = _start(batches[5:])
    wait_until(lambda: Job.objects.get(pk=late.pk).status == "done", 60, "the workers to reconnect and do a new job")
    assert_one_hit_per_group(provider_server, batches)

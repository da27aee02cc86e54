"""The pool task delivered again after its first delivery committed the pool and died."""

from datetime import timedelta

import pytest
from django.utils import timezone

from core.models import Job
from core.tasks import task_for
from pooling import services
from pooling.models import Pool, QuerySet, Run

build_pool_task = task_for("pool")

SETTINGS = {"rank_cutoff": 2, "depth": 1, "magnitude": "tf", "tokenizer": "words"}


def _arguments():
    return [
        "p1",
        QuerySet.objects.get(name="q").pk,
        list(Run.objects.order_by("name").values_list("pk", flat=True)),
        SETTINGS,
    ]


def test_a_redelivery_finds_the_pool_its_dead_delivery_committed(world, settings):
    job = Job.objects.create(kind="pool", task=build_pool_task.name, arguments=_arguments())
    # The first delivery claimed the job, committed the pool, and died before recording it.
    services.build_pool(
        "p1", QuerySet.objects.get(name="q"), list(Run.objects.order_by("name")), services.PoolSettings(**SETTINGS)
    )
    Job.objects.filter(pk=job.pk).update(
        status="running",
        attempts=1,
        worker="gone:1",
        heartbeat=timezone.now() - timedelta(seconds=settings.JOB_LEASE_SECONDS + 1),
    )

    build_pool_task.apply((job.pk, *job.arguments))

    job.refresh_from_db()
    assert (job.status, job.attempts, job.result["pool"]) == ("done", 2, "p1")
    assert Pool.objects.count() == 1


def test_a_first_delivery_does_not_mistake_an_older_pool_for_its_own(world):
    services.build_pool(
        "p1", QuerySet.objects.get(name="q"), list(Run.objects.order_by("name")), services.PoolSettings(**SETTINGS)
    )
    job = Job.objects.create(kind="pool", task=build_pool_task.name, arguments=_arguments())

    with pytest.raises(Exception, match="already exists"):
        build_pool_task.apply((job.pk, *job.arguments))

    job.refresh_from_db()
    assert job.status == "failed" and "already exists" in job.message

"""The pool task through a real broker (Redis in bin/test) and a real Celery worker."""

import time

import pytest
from celery.contrib.testing.worker import start_worker
from django.db import transaction

from config.celery import app
from core.jobs import start_job
from core.models import Job
from core.tasks import task_for
from pooling.models import Pool, QuerySet, Run

build_pool_task = task_for("pool")


@pytest.mark.broker
@pytest.mark.django_db(transaction=True)
def test_pool_task_runs_on_a_worker(world):
    runs = list(Run.objects.order_by("name").values_list("pk", flat=True))
    with start_worker(app, perform_ping_check=False, pool="solo", shutdown_timeout=30):
        with transaction.atomic():
            job = start_job(
                build_pool_task,
                "pool",
                "Pool via broker",
                "brokered",
                QuerySet.objects.get(name="q").pk,
                runs,
                {"rank_cutoff": 2, "depth": 1, "magnitude": "tf", "tokenizer": "words"},
            )
        deadline = time.monotonic() + 60
        while job.status not in (Job.Status.DONE, Job.Status.FAILED) and time.monotonic() < deadline:
            time.sleep(0.2)
            job.refresh_from_db()
    assert job.status == Job.Status.DONE
    assert job.attempts == 1
    assert Pool.objects.get(name="brokered").queries.queries.count() == 2


@pytest.mark.broker
@pytest.mark.django_db(transaction=True)
def test_run_import_split_over_a_worker_through_the_broker(world):
    """``import_run --chunks``: the chunks go through Redis to a real worker and come back merged."""
    from pooling import services
    from pooling.models import Collection, ScanChunk

    collection = Collection.objects.get(name="tiny")
    with start_worker(app, perform_ping_check=False, pool="solo", shutdown_timeout=30):
        run = services.import_run(world["run_a"], "a-chunked", collection, chunks=2, timeout=60).obj
    assert not ScanChunk.objects.exists()  # both chunks were read (by the worker: no eager mode here), then removed
    assert services.run_frame(run).equals(services.run_frame(Run.objects.get(name="a")))

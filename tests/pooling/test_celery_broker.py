"""The pool task through a real broker (Redis in bin/test) and a real Celery worker."""

import time

import pytest
from celery.contrib.testing.worker import start_worker
from django.db import transaction

from config.celery import app
from core.jobs import start_job
from core.models import Job
from pooling.models import Pool, QuerySet, Run
from pooling.tasks import build_pool_task


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

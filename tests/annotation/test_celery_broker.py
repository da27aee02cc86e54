"""Publishing as a Celery task through a real broker (Redis in bin/test) and a real worker."""

import time

import pytest
from django.db import transaction

from annotation import services
from annotation.crowd.services.background import start_publish
from annotation.models import Batch
from config.celery import app
from core.models import Job


@pytest.mark.broker
@pytest.mark.django_db(transaction=True)
def test_publish_runs_on_a_worker_after_commit(query_set):
    batch = services.create_batch(
        "brokered", services.BatchSettings(queries_per_hit=2, assignments_per_query=3), query_set=query_set
    )
    from celery.contrib.testing.worker import start_worker  # the broker's tests alone need it, so only they import it

    with start_worker(app, perform_ping_check=False, pool="solo", shutdown_timeout=30):
        with transaction.atomic():
            job = start_publish(batch)
        deadline = time.monotonic() + 60
        while job.status not in (Job.Status.DONE, Job.Status.FAILED) and time.monotonic() < deadline:
            time.sleep(0.2)
            job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.message
    batch.refresh_from_db()
    assert batch.status == Batch.Status.PUBLISHED
    assert job.result["published"] == batch.hits.count() == 3

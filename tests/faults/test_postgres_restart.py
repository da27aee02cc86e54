"""PostgreSQL restarted while in-house annotators post answers to a live server (gunicorn).

Six virtual annotators (tests.support.virtual_annotator: the real login form, next-HIT
redirect and HIT form) work through a published local batch while the cluster is
restarted under them (``pg_ctl restart -m fast`` cuts every session off).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import pytest
from django.db import connection, transaction

from annotation.models import Assignment, Judgment
from core.jobs import start_job
from core.models import Job
from core.tasks import task_for
from platforms.inhouse.services.annotators import create_annotator
from tests.faults.servers import gunicorn, port_open, wait_until
from tests.loopback import free_port
from tests.support.virtual_annotator import SiteError, VirtualAnnotator

publish_batch_task = task_for("annotation.publish")

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]

ANNOTATORS = 6
PASSWORD = "pw-secret-123"


@dataclass
class Outcome:
    annotator: str
    assignment: int
    accepted: bool | None  # None: an error (5xx, connection), no answer either way
    at: float


def _annotate(client: VirtualAnnotator, outcomes: list[Outcome], stop: threading.Event) -> None:
    """Log in, then take and answer HITs until told to stop or none is left; errors are retried.

    "No more HITs" is believed at once: the site must not say it while HITs are left, also
    not while the cluster restarts (it did, once in six runs, before ``claim_hit`` locked
    one candidate at a time)."""
    while not stop.is_set():
        try:
            client.login()
            break
        except SiteError:
            time.sleep(0.2)
    while not stop.is_set():
        try:
            hit = client.next_hit()
        except SiteError:
            time.sleep(0.1)
            continue
        if hit is None:
            return
        try:
            accepted = client.submit(hit)
        except SiteError:
            accepted = None
            time.sleep(0.1)
        outcomes.append(Outcome(client.username, hit.assignment, accepted, time.monotonic()))


def _publish(batch) -> Job:
    with transaction.atomic():
        job = start_job(publish_batch_task, "annotation.publish", f"Publish {batch.name}", batch.pk)
    wait_until(lambda: Job.objects.get(pk=job.pk).status == "done", 60, f"{batch.name} published by a worker")
    return job


def test_a_postgres_restart_during_submissions_leaves_no_success_unrecorded(
    postgres, make_batches, start_workers, process_env, tmp_path
):
    """Pass: every accepted submission has its assignment submitted with its judgment
    committed; after the restart every annotator gets submissions accepted again and a
    worker does a new job, with neither gunicorn nor the workers restarted."""
    first, second = make_batches("local", n=2, hits=30, assignments=ANNOTATORS)
    names = [f"ann-{i}" for i in range(ANNOTATORS)]
    for name in names:
        create_annotator(name, password=PASSWORD)
    workers = start_workers(2)
    _publish(first)

    port = free_port()
    site = gunicorn(port, process_env, tmp_path / "gunicorn.log").start()
    try:
        wait_until(lambda: port_open(port), 30, "gunicorn to listen")
        outcomes: list[Outcome] = []
        stop = threading.Event()
        clients = [VirtualAnnotator(f"http://127.0.0.1:{port}", name, PASSWORD, seed=i) for i, name in enumerate(names)]
        threads = [threading.Thread(target=_annotate, args=(c, outcomes, stop), daemon=True) for c in clients]
        for thread in threads:
            thread.start()
        wait_until(lambda: sum(o.accepted is True for o in outcomes) >= 2 * ANNOTATORS, 90, "work before the restart")

        postgres.restart()
        restarted = time.monotonic()
        connection.close()  # this process's session was cut off too

        def everyone_recovered() -> bool:
            after = {o.annotator for o in list(outcomes) if o.accepted and o.at > restarted}
            return after == set(names)

        wait_until(everyone_recovered, 60, "every annotator to get a submission accepted after the restart")
        stop.set()
        for thread in threads:
            thread.join(30)
        assert site.alive(), "gunicorn died"
    finally:
        site.stop()

    accepted = [o.assignment for o in outcomes if o.accepted]
    submitted = dict(Assignment.objects.filter(pk__in=accepted).values_list("pk", "status"))
    judged = set(Judgment.objects.filter(assignment__in=accepted).values_list("assignment", flat=True))
    missing = [pk for pk in accepted if submitted.get(pk) not in ("submitted", "approved") or pk not in judged]
    assert not missing, f"accepted without a committed submission: {missing}"
    assert len(accepted) == len(set(accepted)), "an assignment was accepted twice"

    _publish(second)  # the workers, never restarted, do a new job
    assert all(worker.alive() for worker in workers)

"""A job that kills its worker every time it runs (issue 82): failed after its last attempt, with the reason.

A job that blows up its worker's memory is killed by the kernel (SIGKILL, no clean-up) each time it
is carried out. It used to be handed out again forever: the sweeper found the dead claimer and sent
it again, and so did the worker that lost its pool process. Here the test is the kernel: it kills
the process carrying the job out, once for each of ``JOB_MAX_ATTEMPTS`` attempts, while the sweeper
runs as cron would and another user asks the site (gunicorn) for a page of the API all along.
"""

from __future__ import annotations

import os
import signal
import threading
import urllib.error
import urllib.request

import pytest
from django.db import transaction

from core.jobs import start_job
from core.jobs.sweeper import sweep_jobs
from core.models import Job
from core.services.api_tokens import api_token
from core.tasks import task_for
from tests.faults.servers import gunicorn, parent_pid, port_open, wait_until
from tests.loopback import free_port

publish_batch_task = task_for("annotation.publish")

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]

MAX_ATTEMPTS = 3


def _ask(url: str, key: str, answers: list[int | str], stop: threading.Event) -> None:
    """Another user's API GET, again and again: its status, or the error that stood for one."""
    while not stop.is_set():
        request = urllib.request.Request(url, headers={"Authorization": f"Token {key}"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                answers.append(response.status)
        except urllib.error.HTTPError as exc:
            answers.append(exc.code)
        except OSError as exc:
            answers.append(repr(exc))
        stop.wait(0.2)


@pytest.mark.parametrize("victim", ["pool process", "whole worker"])
def test_a_job_whose_worker_is_killed_each_time_fails_after_its_last_attempt(
    victim, provider_server, make_batches, start_workers, process_env, tmp_path, settings, django_user_model
):
    """Pass: the job killed at each of its 3 attempts ends failed with attempts 3 and a message naming
    the attempts, the death and what to do; no sweep or late delivery runs it a fourth time; every GET
    of another user, through the site, answered 200, also while the job's workers were being killed.

    Killing the pool process running it (what the kernel's OOM killer does: the largest process),
    the worker puts the message back at once and the next delivery claims it; after the last attempt
    that delivery fails it. Killing the whole worker (a lost machine), the sweeper hands the job back
    and sends it to a worker started anew; after the last attempt the sweeper fails it.
    """
    settings.JOB_MAX_ATTEMPTS = MAX_ATTEMPTS
    env = {**provider_server.env, "JOB_MAX_ATTEMPTS": str(MAX_ATTEMPTS)}
    provider_server.slow(0.3)  # 40 HITs: no attempt finishes before it is killed
    [batch] = make_batches(provider_server.provider, n=1, hits=40)
    workers = start_workers(1, env)
    other = django_user_model.objects.create_user("other-lab", password="pw-secret-123", is_staff=True)
    key = api_token(other)

    port = free_port()
    site = gunicorn(port, process_env, tmp_path / "gunicorn.log", workers=1, threads=2).start()
    answers: list[int | str] = []
    stop = threading.Event()
    asker = threading.Thread(target=_ask, args=(f"http://127.0.0.1:{port}/api/jobs/", key, answers, stop), daemon=True)
    try:
        wait_until(lambda: port_open(port), 30, "gunicorn to listen")
        asker.start()
        with transaction.atomic():
            job = start_job(publish_batch_task, "annotation.publish", f"Publish {batch.name}", batch.pk)

        answered_while_killing = 0
        for attempt in range(1, MAX_ATTEMPTS + 1):

            def running(attempt=attempt):
                sweep_jobs()  # as cron would, every minute
                return Job.objects.filter(pk=job.pk, status="running", attempts=attempt).first()

            claimed = wait_until(running, 60, f"attempt {attempt} to run", interval=0.05)
            before = len(answers)
            pid = int(claimed.worker.rpartition(":")[2])
            if victim == "pool process":
                os.kill(pid, signal.SIGKILL)
            else:
                next(w for w in workers if w.alive() and w.pid == parent_pid(pid)).kill9()
                if attempt < MAX_ATTEMPTS:
                    workers += start_workers(1, env)
            wait_until(lambda before=before: len(answers) > before + 2, 60, "another user's GETs to be answered")
            answered_while_killing += len(answers) - before

        def failed() -> bool:
            sweep_jobs()
            return Job.objects.get(pk=job.pk).status == "failed"

        wait_until(failed, 60, "the job to be failed after its last attempt", interval=0.2)
        # Nothing sends it again: a further sweep, and a worker that would take any message left.
        assert sweep_jobs().resent == []
        if victim == "whole worker":
            start_workers(1, env)
        stop.wait(float(process_env["JOB_LEASE_SECONDS"]))  # a late delivery's time to arrive
        assert sweep_jobs().resent == []
    finally:
        stop.set()
        asker.join(60)
        site.stop()

    job = Job.objects.get(pk=job.pk)
    assert (job.status, job.attempts) == ("failed", MAX_ATTEMPTS), job.message
    for words in (f"attempts 1 to {MAX_ATTEMPTS}", "died", "killed by the system", "memory", "smaller input"):
        assert words in job.message, (words, job.message)
    assert batch.hits.exclude(provider_id=None).count() < batch.hits.count()  # never finished
    assert answered_while_killing > 0
    assert set(answers) == {200}, [a for a in answers if a != 200][:5]

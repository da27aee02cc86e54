"""Pre-labelling is refused while the same machine is already labelling the batch (issue 27.13):
three posts at once must not run three jobs paying for the same answers."""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.urls import reverse

from annotation.machine.services.background import start_prelabel
from core.errors import StateError
from core.models import Job
from tests.annotation.conftest import make_batch


def _post(client, batch, **data):
    return client.post(f"/api/annotation/batches/{batch.name}/prelabel/", data, content_type="application/json")


def test_a_second_post_while_the_first_job_is_queued_is_refused(query_set, researcher, client):
    batch = make_batch(query_set)
    client.force_login(researcher)
    answers = [_post(client, batch, labeller="rules") for _ in range(3)]
    assert [a.status_code for a in answers] == [202, 409, 409]
    job = Job.objects.get(kind="annotation.prelabel")
    assert f"already being pre-labelled with rules (job {job.pk}, pending)" in answers[1].json()["detail"]
    assert _post(client, batch, labeller="openai").status_code != 409  # another machine is not refused as busy
    job.status = Job.Status.RUNNING
    job.save()
    assert _post(client, batch, labeller="rules").status_code == 409
    job.status = Job.Status.DONE
    job.save()
    assert _post(client, batch, labeller="rules").status_code == 202  # once it ended, it may run again
    other = make_batch(query_set, name="b2")
    assert _post(client, other, labeller="rules").status_code == 202  # another batch is independent


def test_the_page_says_why(query_set, researcher, client):
    batch = make_batch(query_set)
    client.force_login(researcher)
    url = reverse("annotation:batch-prelabel", args=[batch.name])
    assert client.post(url, {"labeller": "rules"}).status_code == 302
    again = client.post(url, {"labeller": "rules"})
    assert again.status_code == 400 and "already being pre-labelled with rules" in again.content.decode()
    assert Job.objects.filter(kind="annotation.prelabel").count() == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgresql
def test_three_simultaneous_starts_make_one_job(query_set, monkeypatch):
    """Three posts while the first job is still queued (a busy worker): one job, two refusals.

    The suite runs jobs inline at the commit, so a fast ``rules`` job could end before the
    third post took the lock, and a job that has ended may rightly be started again (CI saw
    two starts). The jobs are left queued here, as a worker that has not picked them up yet.
    """
    monkeypatch.setattr("core.tasks.send_job", lambda job, task=None: None)
    batch = make_batch(query_set)
    start, outcomes = threading.Barrier(3), []

    def post():
        try:
            start.wait(10)
            start_prelabel(batch, "rules")
            outcomes.append("started")
        except StateError:
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [threading.Thread(target=post) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(outcomes) == ["refused", "refused", "started"]
    assert Job.objects.filter(kind="annotation.prelabel").count() == 1


def test_the_same_training_file_posted_twice_is_refused_while_the_first_job_is_queued(query_set, researcher, client):
    """Review of 27.13: the running-job check compared the kept uploads' paths, which carry a random
    prefix, so two posts of one file started two ``trained`` jobs. An upload is its content now."""
    from pathlib import Path

    from tests.annotation.machine.test_prelabel_trained import toy_set
    from tests.annotation.machine.test_prelabel_training_files import _upload, _uploads, tsv

    batch = make_batch(query_set)
    client.force_login(researcher)
    texts, labels = toy_set()
    content = tsv(texts, labels)
    assert _upload(client, batch, content).status_code == 302  # queued (its job not run here)
    again = _upload(client, batch, content)
    assert again.status_code == 400 and "already being pre-labelled with trained" in again.content.decode()
    job = Job.objects.get(kind="annotation.prelabel")
    assert _uploads() == [Path(job.arguments[3])]  # the refused post's upload is deleted, the job's kept

    other = tsv(texts[:-1], labels[:-1])  # another file of the same name: another machine
    assert _upload(client, batch, other).status_code == 302
    assert Job.objects.filter(kind="annotation.prelabel").count() == 2
    assert _upload(client, batch, content, name="renamed.tsv").status_code == 302  # another name: another machine
    Job.objects.filter(kind="annotation.prelabel").update(status=Job.Status.RUNNING)
    for path in _uploads():  # the jobs read (and deleted) their uploads: the name decides
        path.unlink()
    assert _upload(client, batch, content).status_code == 400
    assert _upload(client, batch, content, name="new-name.tsv").status_code == 302
    Job.objects.filter(kind="annotation.prelabel").update(status=Job.Status.DONE)
    assert _upload(client, batch, content).status_code == 302  # once they ended, it may run again

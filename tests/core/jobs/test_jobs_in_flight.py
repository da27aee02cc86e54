"""Issue 68: each user and each group has a bound on jobs in flight, and waiting jobs take the groups in turn.

The bound (``JOB_MAX_IN_FLIGHT_PER_USER``, ``JOB_MAX_IN_FLIGHT_PER_GROUP``) counts the jobs a request
started that are pending or running; one more is refused (:class:`core.jobs.TooManyJobs`, the API's 429).
Commands and jobs are not bounded. The in-process runner (:mod:`core.jobs.in_process`) takes the next
waiting job of each group in turn.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from core.db.scope import answering
from core.jobs import TooManyJobs, in_process, start_job
from core.models import Job, ResearchGroup

pytestmark = pytest.mark.django_db


def a_request(user):
    return SimpleNamespace(user=user, method="POST", headers={}, session={})


@pytest.fixture
def labs(django_user_model):
    a = ResearchGroup.objects.create(name="Lab A", slug="lab-a")
    b = ResearchGroup.objects.create(name="Lab B", slug="lab-b")
    users = {
        name: django_user_model.objects.create_user(name, password="pw-secret-123", is_staff=True)
        for name in ("ann", "amy", "bob")
    }
    for name, group in (("ann", a), ("amy", a), ("bob", b)):
        users[name].research_memberships.create(group=group, role="researcher")
    return SimpleNamespace(a=a, b=b, **users)


def start_as(user, group, n=1):
    """``n`` jobs started by ``user``'s request on ``group``'s study (never sent: they stay pending)."""
    with answering(a_request(user)):
        return [start_job("core.tasks.nothing", "test.bound", f"job {i}", of=group) for i in range(n)]


def test_a_user_past_the_bound_is_refused_and_the_others_are_not(labs, settings):
    settings.JOB_MAX_IN_FLIGHT_PER_USER = 3
    settings.JOB_MAX_IN_FLIGHT_PER_GROUP = 100
    start_as(labs.ann, labs.a, 3)
    with pytest.raises(TooManyJobs, match=r"you have 3 jobs waiting or running.*JOB_MAX_IN_FLIGHT_PER_USER"):
        start_as(labs.ann, labs.a)
    assert Job.objects.filter(started_by=labs.ann).count() == 3  # the refused one left no row
    start_as(labs.amy, labs.a)  # another user of the same group
    start_as(labs.bob, labs.b)
    # One finishes: there is room again.
    Job.objects.filter(pk=Job.objects.filter(started_by=labs.ann).order_by("pk")[0].pk).update(status="done")
    start_as(labs.ann, labs.a)


def test_a_group_past_the_bound_is_refused_and_another_group_is_not(labs, settings):
    settings.JOB_MAX_IN_FLIGHT_PER_USER = 100
    settings.JOB_MAX_IN_FLIGHT_PER_GROUP = 4
    start_as(labs.ann, labs.a, 2)
    start_as(labs.amy, labs.a, 2)
    with pytest.raises(TooManyJobs, match=r"your research group has 4 jobs.*JOB_MAX_IN_FLIGHT_PER_GROUP"):
        start_as(labs.amy, labs.a)
    start_as(labs.bob, labs.b, 4)
    assert Job.objects.filter(group=labs.a).count() == 4 and Job.objects.filter(group=labs.b).count() == 4


def test_jobs_started_without_a_request_are_not_bounded(labs, settings):
    settings.JOB_MAX_IN_FLIGHT_PER_USER = 1
    settings.JOB_MAX_IN_FLIGHT_PER_GROUP = 1
    for i in range(3):  # a command, the sweeper, a job starting another
        start_job("core.tasks.nothing", "test.bound", f"job {i}", of=labs.a)
    assert Job.objects.filter(group=labs.a, started_by=None).count() == 3


def test_the_api_answers_a_json_429_naming_the_bound(labs, settings, client):
    """Through a real endpoint that starts a job: the query-set import (a researcher's)."""
    settings.JOB_MAX_IN_FLIGHT_PER_USER = 1
    client.force_login(labs.bob)
    upload = "/api/pooling/imports/queries/"

    def send(name):
        from django.core.files.uploadedfile import SimpleUploadedFile

        return client.post(upload, {"name": name, "file": SimpleUploadedFile(f"{name}.tsv", b"1\twho is she\n")})

    assert send("q1").status_code == 202
    refused = send("q2")
    assert refused.status_code == 429 and refused["Content-Type"] == "application/json"
    assert "JOB_MAX_IN_FLIGHT_PER_USER" in refused.json()["detail"]


def test_waiting_jobs_take_the_groups_in_turn(monkeypatch, settings):
    """One thread; a job of group 1 holds it while group 1 queues three more and group 2 two: they then run
    1, 2, 1, 2, 1 (round-robin), not group 1's three first (first come, first served)."""
    settings.JOB_LOCAL_THREADS = 1
    monkeypatch.setattr(in_process, "_executor", None)  # a pool of this test's size
    ran: list[tuple[int, int]] = []
    started, hold, finished = threading.Event(), threading.Event(), threading.Event()

    def job(group: int, n: int):
        def run():
            if n == 0:
                started.set()
                assert hold.wait(30)
            ran.append((group, n))
            if (group, n) == (1, 4):
                finished.set()

        return run

    monkeypatch.setattr(in_process, "_deliver", lambda job_id, run: run())
    in_process.submit(100, job(1, 0), group=1)
    assert started.wait(30)  # the one thread holds group 1's first job
    for n in (1, 2, 3):
        in_process.submit(100 + n, job(1, n), group=1)
    for n in (1, 2):
        in_process.submit(200 + n, job(2, n), group=2)
    in_process.submit(104, job(1, 4), group=1)
    assert in_process.waiting_by_group() == {1: [101, 102, 103, 104], 2: [201, 202]}
    hold.set()
    assert finished.wait(30)
    in_process._pool().shutdown(wait=True)
    assert ran == [(1, 0), (1, 1), (2, 1), (1, 2), (2, 2), (1, 3), (1, 4)]

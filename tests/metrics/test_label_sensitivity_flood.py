"""Issue 68.1: a flood of label-sensitivity requests does not hold another lab's pages or jobs.

One lab's member sends 16 label-sensitivity requests (16 settings) while another lab's researcher
browses and starts a job. Asserted through what can be counted, never a clock:

- no request computes: the member's requests and the researcher's pages are all answered while no
  sensitivity computation runs inside a request;
- the member's 16 requests create at most ``JOB_MAX_IN_FLIGHT_PER_USER`` jobs; the rest get a JSON 429
  naming the bound; the same request again is the same job;
- waiting jobs take the groups in turn: the researcher's job, started after the flood, runs after at
  most one of the member's jobs per thread, not after all of them;
- each settings is computed once, and its result is then answered from the kept row.

The queue is driven by hand (one turn at a time, in this thread, which shares the test's database):
the order is what a pool of one thread would follow. The times this costs a real server are measured
by ``tests/metrics/sensitivity_flood_benchmark.py`` (docs/benchmarks.md).
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from core.db import scope
from core.jobs import in_process
from core.models import Job, Membership, ResearchGroup
from metrics.models import LabelSensitivityResult
from metrics.services import labelling

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

FLOOD = 16


class HeldPool:
    """Stands for the process's pool: each submission is one turn, taken when the test says."""

    def __init__(self) -> None:
        self.turns = 0

    def submit(self, take, *args) -> None:
        self.turns += 1


@pytest.fixture
def two_labs(batch, django_user_model):
    """Lab A holds the batch (the fixtures' default group) and the member who floods it, a researcher (a viewer
    starts no job since issue 82: ``test_viewer_starts_no_job.py``); lab B a researcher of its own."""
    lab_a = batch.group
    lab_b = ResearchGroup.objects.create(name="Lab B", slug="lab-b")
    flooder = django_user_model.objects.create_user("vic", password="pw-secret-123", is_staff=True)
    Membership.objects.create(user=flooder, group=lab_a, role=Membership.Role.RESEARCHER)
    researcher = django_user_model.objects.create_user("rita", password="pw-secret-123", is_staff=True)
    Membership.objects.create(user=researcher, group=lab_b, role=Membership.Role.RESEARCHER)
    return lab_a, lab_b, flooder, researcher


def test_a_flood_is_bounded_and_another_labs_pages_and_job_go_first(
    two_labs, client, settings, monkeypatch, django_capture_on_commit_callbacks
):
    _, lab_b, flooder, researcher = two_labs
    settings.JOB_LOCAL_RUNNER = "threads"  # as deployed without a broker: jobs wait for the pool
    pool = HeldPool()
    monkeypatch.setattr(in_process, "_pool", lambda: pool)
    computed = {"in_requests": 0, "in_jobs": 0}
    real = labelling.label_sensitivity

    def counted(*args, **kwargs):
        computed["in_requests" if scope.current_request.get() is not None else "in_jobs"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(labelling, "label_sensitivity", counted)
    api = reverse("metrics-api-label-sensitivity")

    def ask(bootstrap: int):
        return client.get(api, {"batch": "sens", "runs": "a,b", "cutoffs": "1,2", "bootstrap": str(bootstrap)})

    client.force_login(flooder)
    with django_capture_on_commit_callbacks(execute=True):
        answers = [ask(20 + i) for i in range(FLOOD)]
        repeats = [ask(20) for _ in range(3)]
    bound = settings.JOB_MAX_IN_FLIGHT_PER_USER
    assert [a.status_code for a in answers] == [202] * bound + [429] * (FLOOD - bound)
    assert all("JOB_MAX_IN_FLIGHT_PER_USER" in a.json()["detail"] for a in answers[bound:])
    assert {a.json()["id"] for a in repeats} == {answers[0].json()["id"]}
    flood = [a.json()["id"] for a in answers[:bound]]
    assert Job.objects.filter(started_by=flooder).count() == bound == pool.turns

    # Lab B's researcher browses while the flooder's jobs wait, then starts a job of her own.
    client.force_login(researcher)
    pages = [reverse("home"), reverse("metrics:label-sensitivity"), reverse("pooling:import")]
    pages += [reverse("metrics:report-list")]
    assert {page: client.get(page).status_code for page in pages} == dict.fromkeys(pages, 200)
    with django_capture_on_commit_callbacks(execute=True):
        started = client.post(
            "/api/pooling/imports/queries/",
            {"name": "b-queries", "file": _upload("b.tsv", b"1\twho is she\n2\twho is he\n")},
        )
    assert started.status_code == 202
    theirs = started.json()["id"]
    assert Job.objects.get(pk=theirs).group == lab_b
    assert computed == {"in_requests": 0, "in_jobs": 0}  # nothing computed yet: every answer came at once

    # The pool's turns, one at a time: lab B's job comes second, not after the flooder's eight.
    order = []
    # Each turn runs here (the pool's own wrapper would close this thread's connection: the test's database).
    monkeypatch.setattr(in_process, "_deliver", lambda job_id, run: (order.append(job_id), run()))
    while in_process.waiting_by_group():
        in_process._take_next()
    assert order[:2] == [flood[0], theirs] and sorted(order) == sorted([*flood, theirs])
    assert Job.objects.get(pk=theirs).status == Job.Status.DONE
    assert computed == {"in_requests": 0, "in_jobs": bound}  # once per settings, never in a request

    # Done: the flooder's same requests are answered from the kept rows, nothing computed again.
    client.force_login(flooder)
    again = [ask(20 + i) for i in range(bound)]
    assert [a.status_code for a in again] == [200] * bound
    assert LabelSensitivityResult.objects.filter(result__isnull=False).count() == bound
    assert computed == {"in_requests": 0, "in_jobs": bound}


def _upload(name: str, content: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, content)

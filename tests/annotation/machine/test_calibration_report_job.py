"""The calibration report is computed by a background job, never in a request (issue 57, item 5).

A researcher's first view of a new state of the sample starts ``annotation.calibration_report``
and shows its step while the page polls itself; the job keeps the report under the sample's
:func:`report_version`, so the next view reads it; a viewer sees a kept report but starts
nothing; a sync of the sample starts the job, so the first view after new answers finds it done
or under way. The report shown is the one :func:`calibration_report` computes on the same state.
"""

import re

import pytest
from django.db.models.signals import post_save
from django.urls import reverse
from django.utils import timezone

from annotation.crowd.services.sync import sync_batch
from annotation.machine.report.selectors import REPORT_STEPS, calibration_report, report_version
from annotation.machine.selectors import calibration_batch
from annotation.machine.services.background import CALIBRATION_REPORT_KIND, DRAWING
from annotation.models import Assignment
from core.models import Job, Membership, default_group
from platforms.inhouse.services.simulation import simulate_local_annotations
from tests.annotation.machine.test_prelabelling_pages import calibrated, machine_batch, sampled  # noqa: F401

pytestmark = pytest.mark.slow  # the sample answered round by round, then a bootstrap report


def _report_jobs():
    return Job.objects.filter(kind=CALIBRATION_REPORT_KIND).order_by("pk")


def _settle() -> None:
    """The jobs the fixture's syncs queued (their commits never came in the test's transaction) are let go."""
    _report_jobs().delete()


@pytest.fixture
def viewer(django_user_model, db):
    user = django_user_model.objects.create_user("watcher", password="pw-secret-123", is_staff=True)
    Membership.objects.create(user=user, group=default_group(), role=Membership.Role.VIEWER)
    return user


def test_the_first_view_starts_the_job_and_the_next_shows_its_report(
    calibrated,  # noqa: F811
    researcher,
    client,
    django_capture_on_commit_callbacks,
):
    _settle()
    client.force_login(researcher)
    url = reverse("annotation:batch-calibration", args=["mb"])
    steps: list[tuple[str, int, int | None]] = []

    def seen(sender, instance, **kwargs):
        if instance.kind == CALIBRATION_REPORT_KIND and (instance.result or {}).get("step"):
            steps.append((instance.result["step"], instance.done, instance.total))

    post_save.connect(seen, sender=Job)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            first = client.get(url)
    finally:
        post_save.disconnect(seen, sender=Job)
    page = first.content.decode()
    job = _report_jobs().get()
    assert first.status_code == 200 and first.context["report"] is None
    assert 'id="calibration-computing"' in page and 'hx-trigger="every 2s"' in page
    assert reverse("core:job-detail", args=[job.pk]) in page
    assert job.arguments == [calibrated.pk, report_version(calibrated)]
    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.message
    # Each step said, in order, with its count; the last one the figures. The crowd's reliability counts
    # its bootstrap refits as they go (the report's 2,000 draws, 50 a chunk), up to all of them.
    names = [*REPORT_STEPS, DRAWING]
    refits = re.compile(r": ([\d,]+) of 2,000 refits(?= \(step)")
    counted = [int(m[1].replace(",", "")) for step, _, _ in steps if (m := refits.search(step))]
    assert counted == list(range(50, 2001, 50)), counted
    distinct = list(dict.fromkeys((refits.sub("", step), done, total) for step, done, total in steps))
    assert [step for step, _, _ in distinct] == [f"{n} (step {i + 1} of {len(names)})" for i, n in enumerate(names)]
    assert [(done, total) for _, done, total in distinct] == [(i, len(names)) for i in range(len(names))]

    shown = client.get(url)
    expected = calibration_report(calibrated)  # computed here, on the same state, by the service itself
    assert shown.context["report"] == expected
    text = shown.content.decode()
    assert 'id="calibration-computing"' not in text and text.count("<svg") == 2
    assert f'id="accuracy">{expected["accuracy"]:.3f}<' in text
    assert _report_jobs().count() == 1  # read, not started again
    live = client.get(reverse("annotation:batch-calibration-live", args=["mb"]))
    assert live.context["report"] == expected and _report_jobs().count() == 1

    # New crowd work: a new state, a new job (the kept report is of the old one).
    assignment = Assignment.objects.filter(hit__batch=calibration_batch(calibrated)).first()
    Assignment.objects.filter(pk=assignment.pk).update(reviewed_at=timezone.now())
    with django_capture_on_commit_callbacks(execute=True):
        assert client.get(url).context["report"] is None
    assert _report_jobs().count() == 2 and _report_jobs().last().arguments[1] == report_version(calibrated)
    assert client.get(url).context["report"] is not None


def test_two_views_while_it_runs_start_one_job(calibrated, researcher, client):  # noqa: F811
    _settle()
    client.force_login(researcher)
    url = reverse("annotation:batch-calibration", args=["mb"])
    for _ in range(3):  # the job never runs: its commit does not come in the test's transaction
        response = client.get(url)
        assert response.context["job"] is not None and response.context["report"] is None
    assert _report_jobs().count() == 1


def test_a_viewer_reads_the_kept_report_and_starts_nothing(
    calibrated,  # noqa: F811
    researcher,
    viewer,
    client,
    django_capture_on_commit_callbacks,
):
    _settle()
    client.force_login(viewer)
    url = reverse("annotation:batch-calibration", args=["mb"])
    response = client.get(url)
    assert response.status_code == 200 and response.context["report"] is None and response.context["job"] is None
    assert 'id="calibration-waiting"' in response.content.decode()
    assert not _report_jobs().exists()

    client.force_login(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        client.get(url)
    client.force_login(viewer)
    assert client.get(url).context["report"] == calibration_report(calibrated)


def test_too_few_labels_is_said_on_the_page_from_the_jobs_refusal(
    sampled,  # noqa: F811
    researcher,
    client,
    django_capture_on_commit_callbacks,
):
    client.force_login(researcher)
    url = reverse("annotation:batch-calibration", args=["mb"])
    with django_capture_on_commit_callbacks(execute=True):
        client.get(url)
    job = _report_jobs().get()
    assert job.status == Job.Status.FAILED and "at least 10 are needed" in job.message
    page = client.get(url).content.decode()
    assert 'id="calibration-waiting"' in page and "at least 10 are needed" in page
    assert _report_jobs().count() == 1  # the refusal stands for this state: not started again on every poll


def test_a_sync_of_the_sample_starts_the_report_of_its_answers(
    sampled,  # noqa: F811
    researcher,
    client,
    django_capture_on_commit_callbacks,
):
    child = calibration_batch(sampled)
    simulate_local_annotations(child, annotators=4, accuracy=0.9, seed=5)
    with django_capture_on_commit_callbacks(execute=True):
        sync_batch(child)
    job = _report_jobs().get()
    version = report_version(sampled)
    assert job.arguments == [sampled.pk, version] and job.status == Job.Status.DONE, job.message
    with django_capture_on_commit_callbacks(execute=True):
        sync_batch(child)  # nothing new: the kept report stands
    assert _report_jobs().count() == 1
    client.force_login(researcher)
    shown = client.get(reverse("annotation:batch-calibration", args=["mb"])).context["report"]
    assert shown == calibration_report(sampled) and _report_jobs().count() == 1


def test_the_api_answers_202_with_the_job_then_the_report_and_a_viewer_409(
    calibrated,  # noqa: F811
    researcher,
    viewer,
    client,
    django_capture_on_commit_callbacks,
):
    _settle()
    url = "/api/annotation/batches/mb/calibration/"
    client.force_login(viewer)
    refused = client.get(url)
    assert refused.status_code == 409 and "not computed yet" in refused.json()["detail"] and not _report_jobs().exists()

    client.force_login(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        started = client.get(url)
    job = _report_jobs().get()
    assert started.status_code == 202 and started.json()["id"] == job.pk
    assert started["Location"] == reverse("job-detail", args=[job.pk])
    expected = calibration_report(calibrated)
    assert client.get(url).json() == client.get(url).json()  # read, not computed again
    assert _report_jobs().count() == 1
    client.force_login(viewer)
    served = client.get(url)
    assert served.status_code == 200 and served.json()["accuracy"] == expected["accuracy"]
    assert served.json()["against_truth"]["accuracy_true"] == expected["against_truth"]["accuracy_true"]

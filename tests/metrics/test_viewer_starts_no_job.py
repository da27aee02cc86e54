"""Issue 82: a viewer's GET starts no job (round six: a viewer's GETs of label sensitivity started 8 jobs,
half of the lab's ``JOB_MAX_IN_FLIGHT_PER_GROUP``).

Every GET that could start a job is asked as a viewer of the group: the label-sensitivity API (with the
settings of round six's flood), a report's per-query CSV, its paper bundle (page and API). Each answers
409 saying a researcher or owner asks for it, and no Job (nor a kept-result row) is written. A researcher's
same GET still starts the job; the viewer then follows that job, and reads what is kept.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from core.models import Job, Membership
from metrics.models import LabelSensitivityResult

pytestmark = pytest.mark.django_db

#: Round six's request (the flood of issue 68.1 and 82): these settings, never computed before.
SETTINGS = {"batch": "sens", "runs": "a,b", "cutoffs": "1,2", "bootstrap": "20"}


def _member(django_user_model, group, username: str, role: str):
    user = django_user_model.objects.create_user(username, password="pw-secret-123", is_staff=True)
    Membership.objects.create(user=user, group=group, role=role)
    return user


def test_a_viewers_get_of_label_sensitivity_starts_no_job_a_researchers_does(batch, client, django_user_model):
    viewer = _member(django_user_model, batch.group, "vic", Membership.Role.VIEWER)
    researcher = _member(django_user_model, batch.group, "rita", Membership.Role.RESEARCHER)
    api = reverse("metrics-api-label-sensitivity")

    client.force_login(viewer)
    refused = client.get(api, SETTINGS)
    assert (refused.status_code, refused["Content-Type"]) == (409, "application/json")
    assert "a viewer's request starts no job" in refused.json()["detail"]
    assert "researcher or owner" in refused.json()["detail"]
    assert Job.objects.count() == 0 and LabelSensitivityResult._base_manager.count() == 0

    client.force_login(researcher)
    started = client.get(api, SETTINGS)
    assert started.status_code == 202
    job = Job.objects.get()
    assert (job.kind, job.started_by, started.json()["id"]) == ("label-sensitivity", researcher, job.pk)

    # The viewer follows the job under way (reading starts nothing), then reads the kept result.
    client.force_login(viewer)
    followed = client.get(api, SETTINGS)
    assert (followed.status_code, followed.json()["id"], Job.objects.count()) == (202, job.pk, 1)
    from core.tasks import send_job

    send_job(job)
    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.message
    kept = client.get(api, SETTINGS)
    assert kept.status_code == 200 and kept.json()["batch"] == "sens" and Job.objects.count() == 1


def test_a_viewers_get_of_a_reports_files_starts_no_job(report, client, django_user_model):
    viewer = _member(django_user_model, report.group, "vic", Membership.Role.VIEWER)
    researcher = _member(django_user_model, report.group, "rita", Membership.Role.RESEARCHER)
    per_query = reverse("metrics:report-per-query", args=[report.name])
    paper_page, paper_api = f"/metrics/{report.name}/paper.zip", f"/api/metrics/reports/{report.name}/paper/"

    client.force_login(viewer)
    for url in (per_query, paper_page, paper_api):
        refused = client.get(url)
        assert refused.status_code == 409, url
        text = refused.json()["detail"] if url == paper_api else refused.content.decode()
        assert "a viewer's request starts no job" in text and "researcher or owner" in text, url
    assert Job.objects.count() == 0

    client.force_login(researcher)
    assert client.get(per_query).status_code == 302 and client.get(paper_api).status_code == 202
    assert sorted(Job.objects.values_list("kind", flat=True)) == ["metrics.paper", "metrics.per_query_csv"]
    # The viewer follows the jobs under way.
    client.force_login(viewer)
    assert client.get(per_query).status_code == 302 and client.get(paper_api).status_code == 202
    assert Job.objects.count() == 2

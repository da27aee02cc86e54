"""A job's page in a real browser: it polls itself (htmx), shows progress, then leads on to the result."""

import pytest

from core.jobs import create_job
from core.models import Job
from tests.browser_jobs import JOB_DEADLINE_MS


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_the_job_page_follows_the_job_and_opens_the_result(page, login, django_user_model):
    django_user_model.objects.create_user("researcher", password="pw-secret-123", is_staff=True)
    login("researcher")
    job = create_job("import", "Import collection big from big.tsv")
    page.goto(f"/jobs/{job.pk}/")
    assert page.locator("#status").inner_text() == "pending"

    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING, done=50, total=200)
    page.locator(".progress[aria-valuenow='25']").wait_for(timeout=JOB_DEADLINE_MS)  # the page polls the job
    assert page.locator("#status").inner_text() == "running"

    Job.objects.filter(pk=job.pk).update(status=Job.Status.DONE, done=200, result={"url": "/annotation/"})
    page.wait_for_url("**/annotation/", timeout=JOB_DEADLINE_MS)  # the page led on to the result by itself

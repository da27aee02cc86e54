"""Report pages, downloads, the build form (through the Celery task, eager) and the REST API."""

import pytest
from django.urls import reverse

from core.models import Job
from metrics.models import Report


@pytest.fixture
def user_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("ana", password="pw-secret-123", is_staff=True))
    return client


def test_pages_need_login(client, report):
    response = client.get(reverse("metrics:report-list"))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert client.get("/api/metrics/reports/").status_code in (401, 403)


def test_pages_are_for_researchers(client, report, django_user_model):
    # Reports reveal which queries the crowd called non-gendered: not for annotators.
    client.force_login(django_user_model.objects.create_user("annotator", password="pw-secret-123"))
    assert client.get(reverse("metrics:report-list")).status_code == 403
    assert client.get(reverse("metrics:report-detail", args=["rep"])).status_code == 403
    assert client.get("/api/metrics/reports/").status_code == 403


def test_report_list_and_detail(user_client, report):
    listing = user_client.get(reverse("metrics:report-list")).content.decode()
    assert 'href="/metrics/rep/"' in listing
    detail = user_client.get(reverse("metrics:report-detail", args=["rep"])).content.decode()
    assert "TExFAIR" in detail and "NFaiRR" in detail and "baseline a" in detail
    assert reverse("metrics:report-plot", args=["rep", "cutoffs"]) in detail


@pytest.mark.slow
def test_downloads(user_client, report, per_query_csv):
    csv_response = user_client.get(reverse("metrics:report-csv", args=["rep"]))
    assert (
        csv_response.content.decode().splitlines()[0]
        == "run,metric,variant,cutoff,value,queries,tie_low,tie_high,ties,notes"
    )
    assert "attachment" in csv_response["Content-Disposition"]
    per_query = per_query_csv(user_client, "rep")
    assert per_query.startswith("run,qid,metric,variant,cutoff,value,mean,ci_low,ci_high,p_value")
    for kind in ("cutoffs", "distribution"):
        png = user_client.get(reverse("metrics:report-plot", args=["rep", kind]))
        assert png["Content-Type"] == "image/png" and png.content[:4] == b"\x89PNG"
    assert user_client.get(reverse("metrics:report-plot", args=["rep", "pie"])).status_code == 404
    assert (
        user_client.get(reverse("metrics:report-plot", args=["rep", "distribution"]) + "?cutoff=7").status_code == 404
    )


def test_api_lists_and_nests_results(user_client, report):
    listing = user_client.get("/api/metrics/reports/").json()
    assert listing["count"] == 1 and listing["results"][0]["runs"] == ["a", "c"]
    detail = user_client.get("/api/metrics/reports/rep/").json()
    assert detail["baseline"] == "a" and detail["background"] == "collection"
    rows = {(r["run"], r["metric"], r["variant"], r["cutoff"]): r for r in detail["results"]}
    assert rows[("c", "RaB", "tf", 1)]["queries"] == 3
    assert rows[("a", "RaB", "tf", 1)]["p_value"] is None


def test_staff_form_builds_a_report_through_the_task(
    client, django_user_model, world, django_capture_on_commit_callbacks
):
    staff = django_user_model.objects.create_user("boss", password="pw-secret-123", is_staff=True)
    client.force_login(staff)
    data = {"name": "from-form", "queries": "q", "runs": ["a", "b"], "cutoffs": "2,1", "tokenizer": "words"}
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("metrics:report-create"), data)
    assert response.status_code == 302
    job = Job.objects.get(kind="report")
    assert response["Location"] == reverse("core:job-detail", args=[job.pk])
    assert job.status == Job.Status.DONE, job.message
    assert Report.objects.get(name="from-form").cutoffs == [1, 2]
    assert job.result["url"] == reverse("metrics:report-detail", args=["from-form"])
    assert Report.objects.get(name="from-form").nfairr_normaliser == "comparison"
    exact = {**data, "name": "exact-form", "background": "c", "nfairr_normaliser": "exact"}
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("metrics:report-create"), exact)
    report = Report.objects.get(name="exact-form")
    assert report.nfairr_normaliser == "exact"
    assert report.results.filter(metric="NFaiRR", variant="c:exact").exists()
    assert "by c alone" in client.get(reverse("metrics:report-detail", args=["exact-form"])).content.decode()
    bad = client.post(reverse("metrics:report-create"), {**data, "name": "x", "cutoffs": "a"})
    assert bad.status_code == 400 and "cutoffs: &#x27;a&#x27; is not a whole number" in bad.content.decode()


def test_api_builds_a_report_as_a_job_with_the_forms_rules(user_client, world, django_capture_on_commit_callbacks):
    body = {"name": "api-rep", "queries": "q", "runs": ["a", "b"], "cutoffs": "2,1", "tokenizer": "words"}
    with django_capture_on_commit_callbacks(execute=True):
        response = user_client.post("/api/metrics/reports/", body, content_type="application/json")
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.json()["id"])
    assert job.kind == "report" and job.status == Job.Status.DONE, job.message
    assert Report.objects.get(name="api-rep").cutoffs == [1, 2]
    bad = user_client.post(
        "/api/metrics/reports/", {**body, "name": "api-rep", "cutoffs": "a"}, content_type="application/json"
    )
    assert bad.status_code == 400 and set(bad.json()) == {"name", "cutoffs"}
    assert Job.objects.filter(kind="report").count() == 1

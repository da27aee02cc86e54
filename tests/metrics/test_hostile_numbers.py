"""Cutoffs as a hostile client types them, and the bounds of label sensitivity (issue 44.4/44.5, 68):
``²`` and ``①`` gave a 500 on the report API, the report form and the label-sensitivity endpoint
(``"²".isdigit()`` is true, ``int("²")`` raises); 200 cutoffs held a request for 150 s."""

import pytest
from django.urls import reverse

from genderbias.ranking.defaults import MAX_CUTOFFS
from metrics.models import Report


@pytest.fixture
def staff_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("boss", password="pw-secret-123", is_staff=True))
    return client


@pytest.mark.parametrize("cutoffs", ["²", "5,①", "١٠", "1_0"])
def test_a_unicode_cutoff_is_a_4xx_naming_the_field(world, batch, staff_client, cutoffs):
    api = staff_client.get(reverse("metrics-api-label-sensitivity"), {"batch": "sens", "runs": "a", "cutoffs": cutoffs})
    assert api.status_code == 400 and api.json()["detail"].startswith("cutoffs: ")
    body = {"name": "r", "queries": "q", "runs": ["a"], "cutoffs": cutoffs, "tokenizer": "words"}
    report = staff_client.post("/api/metrics/reports/", body, content_type="application/json")
    assert report.status_code == 400 and report.json()["cutoffs"][0].startswith("cutoffs: ")
    form = staff_client.post(reverse("metrics:report-create"), body)
    assert form.status_code == 400 and "cutoffs: " in form.content.decode()
    assert not Report.objects.exists()


def test_cutoffs_are_bounded_in_number_everywhere(world, staff_client):
    many = ",".join(str(c) for c in range(1, MAX_CUTOFFS + 2))
    body = {"name": "r", "queries": "q", "runs": ["a"], "cutoffs": many, "tokenizer": "words"}
    answer = staff_client.post("/api/metrics/reports/", body, content_type="application/json")
    assert answer.status_code == 400
    assert answer.json()["cutoffs"][0].startswith(f"cutoffs: at most {MAX_CUTOFFS} values (got {MAX_CUTOFFS + 1})")
    deep = staff_client.post("/api/metrics/reports/", body | {"cutoffs": "10001"}, content_type="application/json")
    assert deep.status_code == 400 and deep.json()["cutoffs"][0].startswith("cutoffs: must be at most 10000")


def test_label_sensitivity_cutoffs_are_bounded_and_the_rest_is_a_job(world, batch, staff_client):
    """Issue 68: the API no longer computes in the request, so more cutoffs than the old request's five
    are a job (202); past :data:`MAX_CUTOFFS` they are refused as everywhere."""
    api = reverse("metrics-api-label-sensitivity")
    many = ",".join(str(c) for c in range(1, MAX_CUTOFFS + 2))
    answer = staff_client.get(api, {"batch": "sens", "runs": "a", "cutoffs": many, "bootstrap": "5"})
    assert answer.status_code == 400 and answer.json()["detail"].startswith(
        f"cutoffs: cutoffs: at most {MAX_CUTOFFS} values"
    )
    six = staff_client.get(api, {"batch": "sens", "runs": "a,b,c", "cutoffs": "1,2,3,4,5,6", "bootstrap": "5"})
    assert six.status_code == 202 and six.json()["kind"] == "label-sensitivity"


def test_report_cutoff_parameters_refuse_unicode_digits(world, staff_client):
    answer = staff_client.get("/api/metrics/reports/nope/table/", {"cutoff": "²"})
    assert answer.status_code == 400 and answer.json()["detail"].startswith("cutoff: '²' is not a whole number")


@pytest.mark.parametrize(
    ("field", "value"), [("reward", "٠.٥"), ("draws", "١٠٠٠"), ("power", "nan"), ("delta", "1_0"), ("delta", "inf")]
)
def test_the_plan_api_refuses_numbers_that_are_not_plain_ascii(db, staff_client, field, value):
    body = {"runs": ["a", "b"], "metric": "ARaB", "delta": "0.01"} | {field: value}
    answer = staff_client.post("/api/metrics/plan/", body, content_type="application/json")
    assert answer.status_code == 400 and field in answer.json(), answer.content


def test_the_plan_api_reads_a_delta_as_people_paste_it(db, staff_client):
    """Issue 53: an exponent, a leading point or many decimals are read (here the pilot is missing, and only that
    is refused): the same value in three spellings gives the same answer."""
    answers = []
    for spelling in ("1e-2", ".01", "0.0100000000000000000"):
        body = {"runs": ["a", "b"], "metric": "ARaB", "delta": spelling}
        answer = staff_client.post("/api/metrics/plan/", body, content_type="application/json")
        assert answer.status_code == 400 and "delta" not in answer.json(), answer.content
        answers.append(answer.json())
    assert answers[0] == answers[1] == answers[2]

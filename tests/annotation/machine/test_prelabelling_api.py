"""Machine pre-labelling through the API: the same path as the pages, JSON refusals (400 naming the
field, 409 when the state refuses), researchers only."""

import pytest
from django.urls import reverse

from annotation.machine.selectors import calibration_batch
from annotation.machine.services.routing import plan_routing
from annotation.models import Batch
from core.models import Job
from tests.annotation.machine.test_prelabelling_pages import (  # noqa: F401 (fixtures)
    answer_until_in,
    calibrated,
    machine_batch,
    sampled,
    splitting_target,
)

REPORT_KEYS = {
    "labeller",
    "n",
    "accuracy",
    "kappa",
    "kappa_ci",
    "per_category",
    "ece",
    "brier",
    "alt_test",
    "proportions",
}


def _api(name: str, endpoint: str) -> str:
    return f"/api/annotation/batches/{name}/{endpoint}/"


ENDPOINTS = [
    ("post", "prelabel"),
    ("get", "prelabels"),
    ("post", "calibration-sample"),
    ("get", "calibration"),
    ("get", "routing"),
    ("post", "routing"),
]


def test_every_endpoint_is_for_researchers(machine_batch, annotators, client):  # noqa: F811
    for method, endpoint in ENDPOINTS:
        response = getattr(client, method)(_api("mb", endpoint), content_type="application/json")
        assert response.status_code in (401, 403), endpoint
        assert response["Content-Type"].startswith("application/json")
    client.force_login(annotators[0])
    for method, endpoint in ENDPOINTS:
        response = getattr(client, method)(_api("mb", endpoint), content_type="application/json")
        assert response.status_code == 403, endpoint
    assert not Job.objects.exists()


@pytest.mark.slow
def test_the_whole_path_through_the_api(machine_batch, researcher, client, django_capture_on_commit_callbacks):  # noqa: F811
    client.force_login(researcher)
    assert client.get(_api("mb", "prelabels")).json() == []
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(_api("mb", "prelabel"), {"labeller": "rules"}, content_type="application/json")
    assert response.status_code == 202, response.json()
    job = Job.objects.get(pk=response.json()["id"])
    assert job.status == Job.Status.DONE and response["Location"] == reverse("job-detail", args=[job.pk])
    runs = client.get(_api("mb", "prelabels")).json()
    assert [run["labeller"] for run in runs] == ["rules"]
    assert runs[0]["labelled"] == job.result["labelled"] and set(runs[0]["counts"]) == {"n", "f", "m", "o"}

    assert client.get(_api("mb", "calibration")).status_code == 409  # no sample yet
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            _api("mb", "calibration-sample"), {"sample": 60, "seed": 2}, content_type="application/json"
        )
    assert response.status_code == 201, response.json()
    answer = response.json()
    assert answer["batch"] == "mb-part-1" and answer["queries"] == 60
    assert sum(s["sampled"] for s in answer["strata"]) == 60 and answer["publish_job"]["id"]
    child = calibration_batch(machine_batch)
    assert child.status == Batch.Status.PUBLISHED
    with django_capture_on_commit_callbacks(execute=True):  # the report's job, started by the first ask (202)
        assert client.get(_api("mb", "calibration")).status_code == 202
    refused = client.get(_api("mb", "calibration"))  # the job's refusal, for this state of the sample
    assert refused.status_code == 409 and "at least" in refused.json()["detail"]
    twice = client.post(_api("mb", "calibration-sample"), {"sample": 60, "seed": 2}, content_type="application/json")
    assert twice.status_code == 409 and "has a calibration sample already" in twice.json()["detail"]
    assert Batch.objects.filter(purpose=Batch.Purpose.CALIBRATION).count() == 1

    with django_capture_on_commit_callbacks(execute=True):
        answer_until_in(machine_batch)  # routing waits for the sample's escalations (issue 58)
        client.get(_api("mb", "calibration"))  # the report of the last answers, if no sync started it
    report = client.get(_api("mb", "calibration")).json()
    assert set(report) >= REPORT_KEYS
    assert report["labeller"] == "rules" and report["n"] >= 10 and len(report["kappa_ci"]) == 2
    assert all({"precision", "recall"} <= set(report["per_category"][label]) for label in "nfmo")
    assert {"winning_rate", "passed"} <= set(report["alt_test"]) and report["alt_test"]["winning_rate"] is not None
    assert all({"estimate", "ci"} <= set(report["proportions"][label]) for label in "nfmo")

    # 60 sample queries certify nothing at 0.95: the preview says so and how many more it would need.
    certified = client.get(_api("mb", "routing"), {"target_accuracy": 0.95}).json()
    assert certified["rule"] == "guarantee" and certified["threshold"] is None and certified["more_reason"]
    # The point-estimate rule, labelled as such.
    target = splitting_target(machine_batch)
    estimate = {"target_accuracy": target, "no_guarantee": True}
    preview = client.get(_api("mb", "routing"), estimate)
    assert preview.status_code == 200, preview.json()
    assert preview.json()["rule"] == "point estimate (no guarantee)"
    plan = plan_routing(machine_batch, target, risk=None)
    assert plan.accepted and plan.to_humans
    data = preview.json()
    assert "accepted" not in data and "to_humans" not in data
    assert data["to_humans_count"] == len(plan.to_humans) and data["accepted_count"] == len(plan.accepted)
    assert data["threshold"] == plan.threshold and data["cost"] == str(plan.cost) and data["saving"] == str(plan.saving)
    budgeted = client.get(_api("mb", "routing"), estimate | {"budget": "0.45"}).json()
    assert budgeted["over_budget_count"] > 0 and budgeted["budget"] == "0.45"
    assert budgeted["to_humans_count"] == len(plan_routing(machine_batch, target, budget="0.45", risk=None).to_humans)
    with_qids = client.get(_api("mb", "routing"), estimate | {"qids": 1}).json()
    assert with_qids["to_humans"] == plan.to_humans and with_qids["accepted"] == plan.accepted

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(_api("mb", "routing"), estimate, content_type="application/json")
    assert response.status_code == 201, response.json()
    routed = response.json()
    assert routed["risk"] is None and routed["rule"] == "point estimate (no guarantee)"
    assert routed["sample_batch"] == "mb-part-1"
    assert routed["accepted_count"] == len(plan.accepted) and routed["to_humans"] == len(plan.to_humans)
    assert routed["routed_batch"] == "mb-part-2" and routed["publish_job"]["id"]
    assert Batch.objects.get(name="mb-part-2").status == Batch.Status.PUBLISHED
    again = client.post(_api("mb", "routing"), estimate, content_type="application/json")
    assert again.status_code == 409 and "routed already" in again.json()["detail"]


#: Each bad request, and the field its 400 must name.
BAD_INPUT = [
    ("post", "prelabel", {"labeller": "oracle"}, "labeller"),
    ("post", "prelabel", {"labeller": "rules", "samples": 3}, "samples"),
    ("post", "prelabel", {"labeller": "trained", "train": "/etc/passwd"}, "train"),  # never a server path
    ("post", "prelabel", {"labeller": "trained", "train": "batch:no-such-batch"}, "train"),
    ("post", "prelabel", {"labeller": "rules", "train": "batch:mb"}, "train"),
    ("post", "calibration-sample", {"sample": 0}, "sample"),
    ("get", "routing", {"target_accuracy": 1.5}, "target_accuracy"),
    ("get", "routing", {"target_accuracy": 0.9, "budget": -1}, "budget"),
    ("post", "routing", {"target_accuracy": 1.5}, "target_accuracy"),
    ("post", "routing", {"target_accuracy": 0.9, "budget": "-1"}, "budget"),
]


def test_bad_input_is_a_400_naming_the_field(calibrated, researcher, client):  # noqa: F811
    """Every bad request against one calibrated batch (built once: a refused request changes nothing, as
    each case checks after its answer), each a 400 naming its field, none routing or pre-labelling."""
    client.force_login(researcher)
    for method, endpoint, body, field in BAD_INPUT:
        if method == "get":
            response = client.get(_api("mb", endpoint), body)
        else:
            response = client.post(_api("mb", endpoint), body, content_type="application/json")
        case = f"{method} {endpoint} {body}"
        assert response.status_code == 400 and field in response.json(), (case, response.json())
        assert not Batch.objects.filter(purpose=Batch.Purpose.ROUTED).exists(), case
        assert not Job.objects.filter(kind="annotation.prelabel").exists(), case


def test_an_unknown_batch_is_a_json_404(researcher, client):
    client.force_login(researcher)
    for method, endpoint in ENDPOINTS:
        response = getattr(client, method)(_api("nope", endpoint), content_type="application/json")
        assert response.status_code == 404 and "detail" in response.json(), endpoint

"""Reports with relevance judgments: effectiveness (ir_measures) beside the bias metrics, in the
stored results, the CSVs, the command's output and the API; unjudged queries listed."""

import csv
import io
import re

import pytest
from django.core.management import CommandError, call_command

from metrics.models import Report
from pooling.models import Qrels

# Query 3 has no judgments. Run a: q1 = d1, d3; q2 = d3, d4; q3 = d2, d1. Run c: q1 = d4, d3; q2 = d4, d3.
QRELS = "1 0 d1 2\n1 0 d3 0\n2 0 d4 1\n"
# By hand, at cutoff 2 (gain = rel, discount log2(rank + 1)):
#   a: q1 RR = 1, nDCG = (2/1) / (2/1) = 1;  q2 RR = 1/2, nDCG = (1/log2 3) / 1 = 0.6309297535714575
#      MRR@2 = (1 + 0.5) / 2 = 0.75; nDCG@2 = (1 + 0.6309297535714575) / 2 = 0.8154648767857288
#   c: q1 RR = 0, nDCG = 0 (d4 and d3 are not relevant for q1); q2 RR = 1, nDCG = 1
#      MRR@2 = 0.5; nDCG@2 = 0.5.   Two queries each (query 3 has no judgments).
EXPECTED = {
    ("a", "RR"): 0.75,
    ("a", "nDCG"): 0.8154648767857288,
    ("c", "RR"): 0.5,
    ("c", "nDCG"): 0.5,
}


@pytest.fixture
def judged(world):
    path = world / "qrels.txt"
    path.write_text(QRELS)
    call_command("import_qrels", str(path), name="judged", queries="q", collection="tiny", verbosity=0)
    return Qrels.objects.get(name="judged")


@pytest.mark.django_db
def test_bias_report_with_qrels_stores_and_writes_effectiveness(judged, tmp_path):
    out, per_query = tmp_path / "r.csv", tmp_path / "pq.csv"
    stdout = io.StringIO()
    call_command(
        "bias_report",
        queries="q",
        runs="a,c",
        cutoffs="2",
        qrels="judged",
        measures="MRR@2,nDCG@2",
        baseline="a",
        bootstrap=20,
        out=str(out),
        per_query=str(per_query),
        name="eff",
        verbosity=0,
        stdout=stdout,
    )
    report = Report.objects.get(name="eff")
    assert (report.qrels, report.measures, report.unjudged) == (judged, ["RR@2", "nDCG@2"], ["3"])
    text = stdout.getvalue()
    assert "RR [judged]" in text and "nDCG [judged]" in text
    said = " ".join(text.split())  # the command wraps its prose (metrics.formatting.wrap)
    assert "1 query of the query set without judgments, listed with empty values and left out of the means: 3" in said

    rows = {
        (r["run"], r["metric"]): r for r in csv.DictReader(io.StringIO(out.read_text())) if r["variant"] == "judged"
    }
    assert set(rows) == set(EXPECTED)
    for key, value in EXPECTED.items():
        assert float(rows[key]["value"]) == pytest.approx(value, abs=1e-12)
        assert rows[key]["cutoff"] == "2" and rows[key]["queries"] == "2"
    result = report.results.get(run__name="c", metric="RR", variant="judged", cutoff=2)
    assert result.ci_low <= 0.5 <= result.ci_high and result.queries == 2

    per = [r for r in csv.DictReader(io.StringIO(per_query.read_text())) if r["metric"] == "RR" and r["run"] == "a"]
    assert {r["qid"]: r["value"] for r in per} == {"1": "1.0", "2": "0.5", "3": ""}  # q3 listed, empty
    assert {r["mean"] for r in per} == {"0.75"}


@pytest.mark.django_db
def test_adding_qrels_leaves_the_bias_values_and_cis_unchanged(judged):
    def bias(name, **extra):
        call_command("bias_report", queries="q", runs="a,c", cutoffs="2", bootstrap=50, name=name, verbosity=0, **extra)
        return {
            (r.run.name, r.metric, r.variant, r.cutoff): (r.value, r.ci_low, r.ci_high, r.queries)
            for r in Report.objects.get(name=name).results.exclude(variant="judged")
        }

    assert bias("plain") == bias("with-qrels", qrels="judged")


@pytest.mark.django_db
def test_measures_need_qrels_and_valid_names(judged):
    with pytest.raises(CommandError, match="--measures needs --qrels"):
        call_command("bias_report", queries="q", runs="a", measures="RR@10", verbosity=0)
    with pytest.raises(CommandError, match="unknown measure 'ERR@10'"):
        call_command("bias_report", queries="q", runs="a", qrels="judged", measures="ERR@10", verbosity=0)
    call_command("bias_report", queries="q", runs="a", cutoffs="2", qrels="judged", bootstrap=5, name="d", verbosity=0)
    assert Report.objects.get(name="d").measures == ["RR@10", "nDCG@10", "R@10", "P@10"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("measures", "words"),
    [
        ("P@99999999999999999999", "must be at most 10000 (got a 20-digit number)"),  # issue 82: once a 202
        ("nDCG@١٠", "is not a whole number: use ASCII digits 0-9"),
    ],
)
def test_a_measures_cutoff_is_refused_before_a_job_is_made(judged, client, django_user_model, measures, words):
    from core.models import Job

    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    body = {"name": "big", "queries": "q", "runs": ["a"], "cutoffs": "2", "qrels": "judged", "measures": measures}
    response = client.post("/api/metrics/reports/", body, content_type="application/json")
    assert response.status_code == 400 and response["Content-Type"] == "application/json"
    (problem,) = response.json()["measures"]
    assert problem.startswith(f"{measures}: parameter 'cutoff': ") and words in problem
    assert not Job.objects.exists() and not Report.objects.exists()
    with pytest.raises(CommandError, match=r"parameter 'cutoff': .*" + re.escape(words)):
        call_command("bias_report", queries="q", runs="a", qrels="judged", measures=measures, verbosity=0)
    assert not Report.objects.exists()


@pytest.mark.django_db
def test_report_api_takes_qrels_and_measures(judged, client, django_user_model, django_capture_on_commit_callbacks):
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    base = {"name": "api-eff", "queries": "q", "runs": ["a", "c"], "cutoffs": "2"}
    response = client.post("/api/metrics/reports/", {**base, "measures": "RR@2"}, content_type="application/json")
    assert response.status_code == 400 and "qrels" in response.json()
    response = client.post(
        "/api/metrics/reports/", {**base, "qrels": "judged", "measures": "nope"}, content_type="application/json"
    )
    assert response.status_code == 400 and "unknown measure" in response.json()["measures"][0]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/api/metrics/reports/",
            {**base, "qrels": "judged", "measures": "MRR@2,nDCG@2"},
            content_type="application/json",
        )
    assert response.status_code == 202
    body = client.get("/api/metrics/reports/api-eff/").json()
    assert (body["qrels"], body["measures"], body["unjudged"]) == ("judged", ["RR@2", "nDCG@2"], ["3"])
    values = {(r["run"], r["metric"]): r["value"] for r in body["results"] if r["variant"] == "judged"}
    assert values == pytest.approx(EXPECTED)
    rows = client.get("/api/metrics/reports/api-eff/per-query/?metric=RR").json()["results"]
    assert {(r["run"], r["qid"]): r["value"] for r in rows} == {
        ("a", "1"): 1.0,
        ("a", "2"): 0.5,
        ("a", "3"): None,  # no judgments: listed, null
        ("c", "1"): 0.0,
        ("c", "2"): 1.0,
        ("c", "3"): None,
    }
    page = client.get("/metrics/api-eff/")
    assert page.status_code == 200 and b"without judgments" in page.content and b"RR" in page.content


@pytest.mark.django_db
@pytest.mark.slow
def test_report_plots_draw_effectiveness_too(judged, client, django_user_model):
    call_command("bias_report", queries="q", runs="a,c", cutoffs="1,2", qrels="judged", measures="nDCG@2", bootstrap=5)
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    for url in ("/metrics/q-a-c/cutoffs.png", "/metrics/q-a-c/distribution.png?cutoff=2"):
        response = client.get(url)
        assert response.status_code == 200 and response.content[:4] == b"\x89PNG", url

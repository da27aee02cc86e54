"""The exposure metrics in a report built through the service: stored results, the API (results,
settings, per-query rows, the ``exposure`` table), the CSV downloads, the plots, ``bias_report``'s
options and the form's checks. The world is tests/metrics/conftest.py's: d1 "She and her sister"
(f = 3), d2 "He met his father" (m = 3), d3 nothing gendered, d4 "the man and the woman" (1, 1)."""

import csv
import io
import math

import pytest
from django.core.management import call_command
from django.urls import reverse

from core.models import Job
from genderbias.ranking.vocabulary import FORM_DEFINITIONS
from metrics import services
from metrics.models import Report


def jsd(p: float, t: float = 0.5) -> float:
    def kl(a, b):
        return sum(x * math.log(x / y) for x, y in ((a, b), (1 - a, 1 - b)) if x > 0)

    middle = (p + t) / 2
    return kl(p, middle) / 2 + kl(t, middle) / 2


@pytest.fixture
def user_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("ana", password="pw-secret-123", is_staff=True))
    return client


def result(report, run, metric, variant, cutoff):
    return report.results.get(run__name=run, metric=metric, variant=variant, cutoff=cutoff)


@pytest.mark.django_db
def test_a_report_stores_the_exposure_metrics_with_the_hand_values(report):
    # Run a: q1 [d1 (female), d3 (neutral)], q2 [d3, d4 (balanced)], q3 [d2 (male), d1 (female)].
    # AWRF@2 (dcg): q1 P = (1, 0); q2 P = (½, ½) → 1; q3 ε_f = 1/log2 3, ε_m = 1.
    q3 = (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    awrf = result(report, "a", "AWRF", "dcg", 2)
    assert awrf.value == pytest.approx(((1 - jsd(1.0)) + 1 + (1 - jsd(q3))) / 3, abs=1e-12)
    assert awrf.queries == 3 and awrf.ci_low <= awrf.value <= awrf.ci_high
    # rND@2 (one cut point, 2): q1 P = 1 → 1; q2 P = ½ → 0; q3 P = ½ → 0.
    assert result(report, "a", "rND", "female", 2).value == pytest.approx(1 / 3)
    # rND@1: q1 d1 → 1; q2 d3 neutral → 0 (no gendered document); q3 d2, P = 0 → 1.
    assert result(report, "a", "rND", "female", 1).value == pytest.approx(2 / 3)
    # rRD@1, female protected: only q3 (no female document at rank 1) under-represents her.
    assert result(report, "a", "rRD", "female", 1).value == pytest.approx(1 / 3)
    # Run c ranks only balanced and neutral documents: fair on every exposure metric.
    assert result(report, "c", "AWRF", "dcg", 2).value == pytest.approx(1.0)
    for metric in ("rKL", "rND", "rRD"):
        assert result(report, "c", metric, "female", 2).value == pytest.approx(0.0)
    # Tested against the baseline like every metric (family: this metric, variant and cutoff).
    assert result(report, "c", "rND", "female", 1).p_value is not None
    assert (report.awrf_weights, report.awrf_p, report.exposure_target) == ("dcg", 0.5, 0.5)
    assert (report.protected_group, report.cut_step) == ("female", 10)


@pytest.mark.django_db
def test_api_csv_plots_and_table_carry_them(user_client, report, per_query_csv):
    detail = user_client.get("/api/metrics/reports/rep/").json()
    assert detail["awrf_weights"] == "dcg" and detail["protected_group"] == "female" and detail["cut_step"] == 10
    assert detail["exposure_target"] == 0.5 and detail["awrf_p"] == 0.5
    rows = {(r["run"], r["metric"], r["variant"], r["cutoff"]): r for r in detail["results"]}
    assert rows[("a", "rND", "female", 1)]["value"] == pytest.approx(2 / 3)
    assert {("a", m, 2) for m in ("AWRF", "rKL", "rND", "rRD")} <= {(r, m, k) for r, m, _, k in rows}
    per_query = user_client.get("/api/metrics/reports/rep/per-query/?metric=rND").json()["results"]
    values = {(r["run"], r["qid"], r["cutoff"]): r["value"] for r in per_query}
    assert values[("a", "1", 1)] == 1.0 and values[("a", "2", 1)] == 0.0 and values[("a", "3", 1)] == 1.0

    results_csv = user_client.get(reverse("metrics:report-csv", args=["rep"])).content.decode()
    found = {(r["run"], r["metric"], r["variant"], r["cutoff"]) for r in csv.DictReader(io.StringIO(results_csv))}
    assert {("a", "AWRF", "dcg", "2"), ("c", "rKL", "female", "1"), ("a", "rRD", "female", "2")} <= found
    per_query_text = per_query_csv(user_client, "rep")
    rnd = [
        r
        for r in csv.DictReader(io.StringIO(per_query_text))
        if (r["metric"], r["run"], r["cutoff"]) == ("rND", "a", "1")
    ]
    assert sorted(float(r["value"]) for r in rnd) == [0.0, 1.0, 1.0]
    assert [float(r["mean"]) for r in rnd] == pytest.approx([2 / 3] * 3)

    svg = user_client.get(reverse("metrics:report-svg", args=["rep", "metric"]) + "?metric=AWRF&variant=dcg")
    assert svg.status_code == 200 and b"<svg" in svg.content
    page = user_client.get(reverse("metrics:report-detail", args=["rep"])).content.decode()
    assert "metric.svg?metric=rKL&amp;variant=female" in page
    assert "Exposure metrics: AWRF with dcg weights; target female share 0.5; rKL/rND/rRD with female" in page

    table = user_client.get("/api/metrics/reports/rep/table/?layout=exposure&cutoff=2").json()
    labels = [column["label"] for column in table["columns"]]
    assert labels == ["NFaiRR@2", "TExFAIR@2", "AWRF@2", "rKL@2", "rND@2", "rRD@2"]
    assert table["missing"] == ["nDCG"]  # no qrels in this report
    assert table["correlations"] == [{"a": "AWRF@2", "b": "NFaiRR@2"}]
    cells = dict(zip(labels, table["rows"][0]["cells"], strict=True))
    assert cells["rND@2"]["value"] == pytest.approx(1 / 3)
    laid_out = user_client.get(reverse("metrics:report-detail", args=["rep"]) + "?layout=exposure&cutoff=2")
    text = laid_out.content.decode()
    assert laid_out.status_code == 200 and "<option selected>exposure</option>" in text and "rRD@2" in text


@pytest.mark.django_db
def test_bias_report_options_are_stored_and_named_in_the_variants(world, tmp_path):
    out = tmp_path / "r.csv"
    stdout = io.StringIO()
    call_command(
        "bias_report",
        queries="q",
        runs="a",
        cutoffs="1",
        awrf_weights="geometric",
        awrf_p=0.3,
        exposure_target=0.4,
        protected_group="male",
        cut_step=1,
        out=str(out),
        bootstrap=10,
        verbosity=0,
        stdout=stdout,
    )
    report = Report.objects.get()
    assert (report.awrf_weights, report.awrf_p, report.exposure_target) == ("geometric", 0.3, 0.4)
    assert (report.protected_group, report.cut_step) == ("male", 1)
    assert "Exposure metrics: AWRF with geometric (p = 0.3) weights; target female share 0.4" in stdout.getvalue()
    rows = {(r["metric"], r["variant"]): r for r in csv.DictReader(io.StringIO(out.read_text()))}
    assert ("AWRF", "geometric:0.3,t=0.4") in rows
    # rND@1, male protected, q = 0.6: q1 d1 (female): |0 − 0.6|/0.6 = 1; q2 d3 neutral: 0;
    # q3 d2 (male): |1 − 0.6|/0.6 = 2/3. Mean 5/9.
    assert float(rows[("rND", "male,t=0.4,step=1")]["value"]) == pytest.approx(5 / 9)
    # AWRF@1, target 0.4: q1 P = 1, q2 no gendered document (1), q3 P = 0.
    expected = ((1 - jsd(1.0, 0.4)) + 1 + (1 - jsd(0.0, 0.4))) / 3
    assert float(rows[("AWRF", "geometric:0.3,t=0.4")]["value"]) == pytest.approx(expected)


@pytest.mark.django_db
def test_the_api_and_form_take_and_check_the_exposure_settings(user_client, world, django_capture_on_commit_callbacks):
    body = {"name": "exp", "queries": "q", "runs": ["a", "b"], "cutoffs": "2", "awrf_weights": "trec"}
    with django_capture_on_commit_callbacks(execute=True):
        response = user_client.post(
            "/api/metrics/reports/", {**body, "exposure_target": 0.3}, content_type="application/json"
        )
    assert response.status_code == 202, response.content
    job = Job.objects.get(pk=response.json()["id"])
    assert job.status == Job.Status.DONE, job.message
    report = Report.objects.get(name="exp")
    assert (report.awrf_weights, report.exposure_target, report.cut_step) == ("trec", 0.3, 10)
    assert report.results.filter(metric="AWRF", variant="trec,t=0.3").exists()
    assert report.results.filter(metric="rKL", variant="female,t=0.3").exists()
    for field, bad in (("awrf_p", 1.5), ("exposure_target", 0.0), ("cut_step", 0), ("awrf_weights", "log")):
        refused = user_client.post(
            "/api/metrics/reports/", {**body, "name": "x", field: bad}, content_type="application/json"
        )
        assert refused.status_code == 400 and field in refused.json(), (field, refused.content)
    page = user_client.post(reverse("metrics:report-create"), {**body, "name": "y", "awrf_p": "1"})
    assert page.status_code == 400 and "strictly between 0 and 1" in page.content.decode()
    with pytest.raises(services.ServiceError, match="protected group"):
        services.ReportSettings(protected_group="other").validate()


@pytest.mark.django_db
def test_a_report_in_the_reference_form_records_it_and_says_so_everywhere(world, user_client, tmp_path):
    """``--exposure-form reference`` (issue 40, item 5): the report stores its form, the variants carry it,
    and the command, the page, the table's notes and the paper bundle's methods text state which form
    was used and how it differs from the papers cited."""
    out, stdout = tmp_path / "r.csv", io.StringIO()
    call_command(
        "bias_report",
        queries="q",
        runs="a,c",
        cutoffs="2",
        cut_step=1,
        exposure_form="reference",
        name="ref",
        out=str(out),
        bootstrap=10,
        verbosity=0,
        stdout=stdout,
    )
    report = Report.objects.get(name="ref")
    assert report.exposure_form == "reference"
    rows = {(r["run"], r["metric"], r["variant"]): r for r in csv.DictReader(io.StringIO(out.read_text()))}
    # rND@2, cut points 1 and 2 (step 1), discount 1/log2(i + 1), against each list's own share:
    # q1 [d1 female, d3 neutral]: one group only → undefined; q2 [d3, d4 balanced]: one half-woman, the
    # share is its own at every cut → Z = 0, undefined; q3 [d2 male, d1 female]: q = ½, cut 1 |0 − ½|·1,
    # cut 2 0; the code's normaliser (protected last: the same list) ½ → 1. One query defined.
    rnd = rows[("a", "rND", "female,reference,step=1")]
    assert (float(rnd["value"]), int(rnd["queries"])) == (pytest.approx(1.0), 1)
    # AWRF@2 (dcg weights), attention per member, smaller over larger: q1 one group → 1; q2 the balanced
    # document is half of each group → 1; q3 the man at rank 1 (1), the woman at rank 2 (1/log2 3).
    assert float(rows[("a", "AWRF", "dcg,reference")]["value"]) == pytest.approx((2 + 1 / math.log2(3)) / 3)
    definition = FORM_DEFINITIONS["reference"]
    said = " ".join(stdout.getvalue().split())  # the command wraps its prose (metrics.formatting.wrap)
    assert definition.rank in said and definition.awrf in said
    assert report.exposure_settings.endswith("the reference form of the cited papers' code")

    page = user_client.get(reverse("metrics:report-detail", args=["ref"]) + "?layout=exposure&cutoff=2")
    text = page.content.decode()
    assert definition.rank in text.replace("&#x27;", "'")
    table = user_client.get("/api/metrics/reports/ref/table/?layout=exposure&cutoff=2").json()
    assert table["definitions"] == [f"{definition.awrf}. {definition.rank}."]

    from publishing.services.paper import paper_files

    files = paper_files(report)
    methods = files["methods.tex"].decode()
    assert "rKL, rND and rRD in the reference form (Yang and Stoyanovich's code)" in methods
    assert "\\cite{yang2017}" in methods and "\\cite{sapiezynski2019}" in methods
    assert "in the reference form (FairRankTune's AWRF with its min-max ratio)" in files["table-exposure.tex"].decode()


@pytest.mark.slow
@pytest.mark.django_db
def test_an_adapted_report_states_how_it_differs_from_the_papers(report):
    """Every report stored before the option (migration 0007: ``adapted``) keeps its meaning and now says
    which form it is in: the methods text and the exposure table name the differences."""
    from metrics.tables import table_text
    from publishing.services.paper import paper_files

    assert report.exposure_form == "adapted"
    assert report.results.filter(metric="rND", variant="female").exists()  # no "reference" in the variant
    methods = paper_files(report)["methods.tex"].decode()
    assert "rKL, rND and rRD in the platform's adapted form" in methods
    assert "not with the protected share of the whole ranked list" in methods
    assert "1 minus the Jensen-Shannon divergence" in methods
    from metrics import selectors

    table = selectors.report_table(report, "exposure", cutoff=2)
    assert FORM_DEFINITIONS["adapted"].rank in " ".join(table_text(table).split())  # notes wrapped


@pytest.mark.django_db
def test_the_form_is_checked_by_the_api_and_the_form(user_client, world):
    body = {"name": "x", "queries": "q", "runs": ["a", "b"], "cutoffs": "2", "exposure_form": "paper"}
    refused = user_client.post("/api/metrics/reports/", body, content_type="application/json")
    assert refused.status_code == 400 and "exposure_form" in refused.json()
    page = user_client.post(reverse("metrics:report-create"), body)
    assert page.status_code == 400 and "exposure_form" in page.content.decode()
    with pytest.raises(services.ServiceError, match="unknown exposure form"):
        services.ReportSettings(exposure_form="paper").validate()

"""Label sensitivity: label sets by hand, ranking changes by hand, and majority/drop == bias_report."""

import csv
import io
import math
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation import services as annotation_services
from annotation.exports.services import export_queries
from annotation.quality.services.adjudication import adjudicate
from core.models import Job
from genderbias.crowd import sensitivity
from metrics import services
from metrics.models import LabelSensitivityResult, Result
from platforms.inhouse.services.annotators import create_annotator
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from pooling.models import QuerySet, Run
from tests.browser_jobs import JOB_DEADLINE_MS, open_the_result, wait_for_image


def frame(rows):
    return pd.DataFrame(rows, columns=["item", "worker", "label"])


# Items: A n n n (unanimous); B n n f (2/3); C n f (tie, disputed); D f f m; E n (one vote: too few).
ROWS = [("A", w, "n") for w in "123"] + [("B", "1", "n"), ("B", "2", "n"), ("B", "3", "f")]
ROWS += [("C", "1", "n"), ("C", "2", "f"), ("D", "1", "f"), ("D", "2", "f"), ("D", "3", "m"), ("E", "3", "n")]


def test_non_gendered_sets_by_hand():
    labels = sensitivity.aggregated_labels(frame(ROWS), min_votes=2)
    assert list(labels["majority"].index[labels["majority"]["disputed"]]) == ["C", "E"]
    sets = sensitivity.non_gendered_sets(labels, adjudicated={"C": "n", "D": "n"}, threshold=0.9)
    assert sets[("majority", "drop")] == ["A", "B"]
    assert sets[("majority", "aggregation")] == ["A", "B"]  # majority has no label for disputed queries
    # C is disputed and adjudicated n; D is not disputed, so its adjudication is not used.
    assert sets[("majority", "adjudicated")] == ["A", "B", "C"]
    assert sets[("majority", "confident")] == ["A"]  # vote shares: A 1, B 2/3
    # Wawa: skills 1 → 1 (A, B, D agree), 2 → 1, 3 → 1/3 (A agrees; B, D not). C: n (1) vs f (1) ties;
    # E: worker 3 alone says n (weight 1/3, share 1).
    wawa = labels["wawa"]
    assert wawa.loc["C", "label"] is None
    assert wawa.loc["B", "confidence"] == pytest.approx(2 / (2 + 1 / 3))
    assert sets[("wawa", "drop")] == ["A", "B"]
    assert sets[("wawa", "aggregation")] == ["A", "B", "E"]
    assert sets[("wawa", "confident")] == ["A", "E"]
    # Dawid-Skene labels every item; E's single "n" makes it n.
    assert labels["dawid-skene"].loc["E", "label"] == "n"
    assert "E" in sets[("dawid-skene", "aggregation")] and "E" not in sets[("dawid-skene", "drop")]
    with pytest.raises(ValueError, match="threshold"):
        sensitivity.non_gendered_sets(labels, threshold=1.5)


def test_ranking_changes_by_hand():
    rows = []
    for aggregation, policy, values in [
        ("majority", "drop", {"a": 0.1, "b": 0.2, "c": 0.3}),
        ("wawa", "drop", {"a": 0.1, "b": 0.2, "c": 0.3}),
        ("wawa", "confident", {"a": 0.3, "b": 0.2, "c": 0.1}),
        ("dawid-skene", "drop", {"a": 0.2, "b": 0.1, "c": 0.3}),
    ]:
        for run, value in values.items():
            rows.append((aggregation, policy, run, "RaB", "tf", 10, value, value, value, 5))
    table = pd.DataFrame(rows, columns=sensitivity.CSV_COLUMNS)
    changes = sensitivity.ranking_changes(table).set_index(["aggregation", "disputed"])
    assert changes.loc[("wawa", "drop"), "kendall_tau"] == pytest.approx(1.0)
    assert changes.loc[("wawa", "drop"), "swapped"] == ""
    assert changes.loc[("wawa", "confident"), "kendall_tau"] == pytest.approx(-1.0)
    assert changes.loc[("wawa", "confident"), "swapped"] == "a<b → b<a; a<c → c<a; b<c → c<b"
    # one discordant pair of three: tau = (2 - 1) / 3
    assert changes.loc[("dawid-skene", "drop"), "kendall_tau"] == pytest.approx(1 / 3)
    assert changes.loc[("dawid-skene", "drop"), "swapped"] == "a<b → b<a"


# --- a batch over the metrics world (queries 1, 2, 3; runs a, b, c) -------------------------------


@pytest.mark.slow
@pytest.mark.django_db
@pytest.mark.parametrize("background", [None, "c"])
def test_majority_drop_equals_bias_report_on_the_exported_set(batch, tmp_path, background):
    export_queries(batch, "non-gendered", tmp_path / "ng.tsv", as_query_set="ng")
    assert set(QuerySet.objects.get(name="ng").queries.values_list("qid", flat=True)) == {"1", "2"}
    runs = [Run.objects.get(name=n) for n in ("a", "b", "c")]
    background = Run.objects.get(name=background) if background else None
    report_settings = services.ReportSettings(cutoffs=(1, 2), bootstrap_samples=200, seed=3)
    report = services.build_report(
        "ng-report", QuerySet.objects.get(name="ng"), runs, report_settings, background=background, bar=False
    )
    result = services.label_sensitivity(batch, runs, report_settings, background=background, bar=False)
    table = result.table
    base = table[(table["aggregation"] == "majority") & (table["disputed"] == "drop")]
    stored = {
        (r.run.name, r.metric, r.variant, r.cutoff): r
        for r in Result.objects.filter(report=report).select_related("run")
    }
    assert len(base) == len(stored) == 3 * (14 + 6 * 2)  # + AWRF, rKL, rND, rRD, EE, GFR at 2 cutoffs
    for row in base.itertuples(index=False):
        expected = stored[(row.run, row.metric, row.variant, row.cutoff)]
        assert row.value == expected.value or (math.isnan(row.value) and expected.value is None)
        assert row.ci_low == expected.ci_low and row.ci_high == expected.ci_high
        assert row.n_queries == expected.queries
    # Dawid-Skene labels the disputed query 3 as well; "aggregation" adds it only if that label is n.
    assert result.set_sizes[("majority", "drop")] == 2
    assert result.set_sizes[("majority", "confident")] == 1  # only q2 is unanimous
    confident = table[(table["aggregation"] == "majority") & (table["disputed"] == "confident")]
    assert set(confident["n_queries"]) == {1}
    assert set(result.rankings.columns) >= {"kendall_tau", "swapped"}


@pytest.mark.slow
@pytest.mark.django_db
def test_adjudicated_policy_reads_the_researchers_rulings(batch, django_user_model):
    """The selector is real now (annotation.selectors.adjudicated_labels): a ruling that the
    disputed query 3 is non-gendered adds it under ``adjudicated`` for every aggregation; a
    ruling on an undisputed query does not change any set (the policy settles disputes only)."""
    runs = [Run.objects.get(name=n) for n in ("a", "b")]
    report_settings = services.ReportSettings(cutoffs=(1, 2), bootstrap_samples=20)
    before = services.label_sensitivity(batch, runs, report_settings, bar=False)
    assert before.set_sizes[("majority", "adjudicated")] == 2
    researcher = django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True)
    adjudicate(batch, "3", "n", "asks about no one in particular", researcher)
    adjudicate(batch, "1", "f", "a ruling on an undisputed query", researcher)
    after = services.label_sensitivity(batch, runs, report_settings, bar=False)
    for aggregation in sensitivity.AGGREGATIONS:
        assert after.set_sizes[(aggregation, "adjudicated")] == after.set_sizes[(aggregation, "drop")] + 1
    assert after.set_sizes[("majority", "drop")] == before.set_sizes[("majority", "drop")] == 2
    table = after.table
    adjudicated = table[
        (table["aggregation"] == "majority") & (table["disputed"] == "adjudicated") & (table["run"] == "a")
    ]
    assert set(adjudicated["n_queries"]) == {3}  # run a ranks all three queries


def test_sensitivity_csvs_go_through_the_spreadsheet_writer():
    """Run names a spreadsheet would evaluate are neutralised; values stay numbers, NaN is empty."""
    from metrics.formatting import rankings_csv, sensitivity_csv

    table = pd.DataFrame(
        [("majority", "drop", "=evil()", "RaB", "tf", 10, -0.25, -0.5, float("nan"), 3)],
        columns=sensitivity.CSV_COLUMNS,
    )
    assert sensitivity_csv(table).splitlines()[1] == "majority,drop,'=evil(),RaB,tf,10,-0.25,-0.5,,3"
    rankings = sensitivity.ranking_changes(table)
    assert rankings_csv(rankings).splitlines()[1] == "majority,drop,RaB,tf,10,1,,"


@pytest.mark.django_db
@pytest.mark.slow
def test_label_sensitivity_command_writes_table_rankings_and_plot(batch, tmp_path):
    out, rankings, plot = tmp_path / "s.csv", tmp_path / "r.csv", tmp_path / "s.png"
    stdout = io.StringIO()
    call_command(
        "label_sensitivity",
        "sens",
        runs="a,b,c",
        cutoffs="1,2",
        out=str(out),
        rankings=str(rankings),
        plot=str(plot),
        bootstrap=50,
        verbosity=0,
        stdout=stdout,
    )
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert list(rows[0]) == sensitivity.CSV_COLUMNS
    assert {(r["aggregation"], r["disputed"]) for r in rows} >= {("majority", "drop"), ("dawid-skene", "drop")}
    assert {r["run"] for r in rows} == {"a", "b", "c"}
    assert {r["metric"] for r in rows} == {"RaB", "ARaB", "NFaiRR", "TExFAIR", "AWRF", "rKL", "rND", "rRD", "EE", "GFR"}
    assert rankings.read_text().startswith("aggregation,disputed,metric,variant,cutoff,runs,kendall_tau,swapped\n")
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = stdout.getvalue()
    assert "Non-gendered queries per aggregation / disputed policy" in text
    assert "majority     drop              2" in text


@pytest.mark.django_db
def test_label_sensitivity_command_errors(batch, tmp_path):
    with pytest.raises(CommandError, match="no batch named 'nope'"):
        call_command("label_sensitivity", "nope", runs="a", out=str(tmp_path / "x.csv"), verbosity=0)
    with pytest.raises(CommandError, match="unknown run"):
        call_command("label_sensitivity", "sens", runs="a,zz", out=str(tmp_path / "x.csv"), verbosity=0)
    with pytest.raises(CommandError, match="threshold"):
        call_command("label_sensitivity", "sens", runs="a", threshold=2, out=str(tmp_path / "x.csv"), verbosity=0)
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.django_db
@pytest.mark.slow
def test_label_sensitivity_page_runs_a_job_and_shows_table_and_plot(
    batch, client, django_user_model, django_capture_on_commit_callbacks
):
    staff = django_user_model.objects.create_user("boss", password="pw-secret-123", is_staff=True)
    plain = django_user_model.objects.create_user("someone", password="pw-secret-123")
    url = reverse("metrics:label-sensitivity")
    data = {"batch": "sens", "runs": ["a", "b"], "cutoffs": "1,2", "bootstrap": "20", "threshold": "0.9"}
    client.force_login(plain)
    assert client.get(url).status_code in (302, 403)
    assert client.post(url, data).status_code in (302, 403)
    assert not Job.objects.exists()
    client.force_login(staff)
    assert client.get(url).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, data)
    job = Job.objects.get(kind="label-sensitivity")
    assert response.status_code == 302 and response["Location"] == reverse("core:job-detail", args=[job.pk])
    assert job.status == Job.Status.DONE, job.message
    kept = LabelSensitivityResult.objects.get()
    assert job.result["url"] == f"{url}?result={kept.pk}" and kept.job == job
    assert kept.result["set_sizes"]["majority/drop"] == 2
    assert kept.settings["runs"] == ["a", "b"] and kept.settings["bootstrap_samples"] == 20
    # The same settings again: the kept result opens at once, nothing is computed again.
    again = client.post(url, data)
    assert again.status_code == 302 and again["Location"] == job.result["url"]
    assert Job.objects.filter(kind="label-sensitivity").count() == 1
    page = client.get(job.result["url"])
    body = page.content.decode()
    assert page.status_code == 200
    assert "data:image/png;base64," in body and "majority/drop" in body and "Kendall" in body
    assert client.get(job.result["url"] + "&cutoff=1").status_code == 200
    assert client.get(job.result["url"] + "&cutoff=7").status_code == 404
    bad = client.post(url, {**data, "runs": ["a", "zz"], "batch": "nope"})
    assert bad.status_code == 400
    assert bad.context["form"].errors == {"batch": ["no batch named nope"], "runs": ["unknown run: zz"]}
    assert client.post(url, {**data, "runs": []}).context["form"].errors == {"runs": ["choose at least one run"]}


@pytest.mark.django_db
def test_label_sensitivity_form_offers_the_existing_batches_and_runs_with_errors_next_to_fields(
    batch, client, django_user_model
):
    client.force_login(django_user_model.objects.create_user("boss", password="pw-secret-123", is_staff=True))
    url = reverse("metrics:label-sensitivity")
    body = client.get(url).content.decode()
    assert 'class="stacked"' in body
    assert '<select name="batch"' in body and '<option value="sens">' in body
    for run in ("a", "b", "c"):
        assert f'<input type="checkbox" name="runs" value="{run}"' in body
    # ?runs= pre-checks the boxes (links back to the form with its settings).
    body = client.get(url, {"runs": ["a", "c"]}).content.decode()
    assert body.count("checked") == 2 and 'value="a" id="id_runs_0" checked' in body
    bad = client.post(url, {"batch": "sens", "runs": ["zz"], "bootstrap": "0"}).content.decode()
    # Each message sits just before its own field's paragraph, in the field's order.
    runs_error = bad.index("unknown run: zz")
    assert bad.index('<ul class="errorlist"', bad.index('name="batch"')) < runs_error < bad.index('name="runs"')
    bootstrap_error = bad.index("Ensure this value is greater than or equal to 1.")
    assert bad.index('name="background"') < bootstrap_error < bad.index('name="bootstrap"')


@pytest.mark.slow
@pytest.mark.django_db
def test_label_sensitivity_api(batch, client, django_user_model, django_capture_on_commit_callbacks):
    staff = django_user_model.objects.create_user("boss", password="pw-secret-123", is_staff=True)
    plain = django_user_model.objects.create_user("someone", password="pw-secret-123")
    api = reverse("metrics-api-label-sensitivity")
    params = {"batch": "sens", "runs": "a,b", "cutoffs": "1,2", "bootstrap": "20"}
    client.force_login(plain)
    assert client.get(api, params).status_code == 403
    client.force_login(staff)
    # Never computed in the request: 202 with the job; the same request while it waits, the same job.
    started = client.get(api, params)
    job = Job.objects.get(kind="label-sensitivity")
    assert started.status_code == 202 and started.json()["id"] == job.pk and started["Location"].endswith(f"/{job.pk}/")
    assert started.json()["status"] == "pending"
    assert client.get(api, params).json()["id"] == job.pk
    assert LabelSensitivityResult.objects.get().result is None
    with django_capture_on_commit_callbacks(execute=True):
        run_job_again = client.get(api, {**params, "bootstrap": "21"})  # another setting, another job: run it
    assert run_job_again.status_code == 202 and Job.objects.filter(kind="label-sensitivity").count() == 2
    from core.tasks import send_job

    send_job(job)  # what a worker does with the first
    job.refresh_from_db()
    assert job.status == Job.Status.DONE, job.message
    answer = client.get(api, params)
    assert answer.status_code == 200
    data = answer.json()
    assert data["batch"] == "sens" and data["runs"] == ["a", "b"]
    assert Job.objects.filter(kind="label-sensitivity").count() == 2
    assert {"aggregation", "disputed", "run", "metric", "cutoff", "value", "ci_low", "ci_high", "n_queries"} <= set(
        data["rows"][0]
    )
    assert data["set_sizes"]["majority/drop"] == 2
    bad = client.get(api, {"batch": "sens", "runs": "zz"})
    assert bad.status_code == 400 and "zz" in bad.json()["detail"]
    assert bad.json()["errors"] == {"runs": ["unknown run: zz"]}
    missing = client.get(api, {"batch": "nope", "runs": "a"})
    assert missing.status_code == 404 and missing.json()["detail"] == "no batch named 'nope'"
    # Names still go in as text: comma-separated or repeated (the same settings: the kept result).
    repeated = client.get(api, {**params, "runs": ["a", "b"]}).json()
    assert repeated["runs"] == ["a", "b"]
    assert client.get(api, {"runs": "a"}).json()["errors"] == {"batch": ["This field is required."]}
    assert np.isfinite([r["value"] for r in data["rows"] if r["metric"] == "RaB"]).all()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_label_sensitivity_from_the_page_in_a_browser(batch, page, login, django_user_model):
    django_user_model.objects.create_user("researcher", password="pw-secret-123", is_staff=True)
    login("researcher")
    page.goto(reverse("metrics:report-list"))
    page.get_by_role("link", name="label sensitivity").click()
    page.get_by_label("Batch").select_option("sens")
    for run in ("a", "b", "c"):
        page.get_by_role("checkbox", name=run, exact=True).check()
    page.get_by_label("Cutoffs").fill("1,2")
    page.get_by_label("Bootstrap").fill("20")
    # The post starts the job and its navigation waits for the answer: the jobs' deadline, not the 10 s action
    # clock, which a loaded machine outlasted once (a clean clone of 7769f78d at load 8)
    page.get_by_role("button", name="Compute").click(timeout=JOB_DEADLINE_MS)

    # The job page polls until the task is done (its state, not a clock) and links to the result.
    open_the_result(page)
    assert "majority/drop" in page.locator("#set-sizes").inner_text()
    image = page.locator("img[alt^='Bias of every run']")
    image.scroll_into_view_if_needed()
    wait_for_image(page, image)
    # The link's page draws its plot in the request: its load has the jobs' deadline, not the action clock
    page.get_by_role("link", name="@1").click(timeout=JOB_DEADLINE_MS)
    assert "At cutoff 1" in page.get_by_role("heading", name="At cutoff 1").inner_text()


@pytest.mark.django_db
def test_a_machine_labelled_batch_gains_rows_by_label_source(world):
    """Machine: 1 f, 2 n (both accepted by routing), 3 f (unsure: to the crowd, which says n).
    Non-gendered sets by hand: crowd only {3}, machine only {2}, hybrid {2, 3}."""
    from annotation.machine.services.calibration import create_derived_batch
    from annotation.models import BatchQuery, PreLabel, Routing

    options = {"provider": "local", "assignments_per_query": 3, "queries_per_hit": 3, "reward": Decimal("0.05")}
    parent = annotation_services.create_batch(
        "mach", annotation_services.BatchSettings(**options), query_set=QuerySet.objects.get(name="q")
    )
    machine = {"1": ("f", 0.9), "2": ("n", 0.95), "3": ("f", 0.6)}
    for bq in BatchQuery.objects.filter(batch=parent):
        label, confidence = machine[bq.qid]
        PreLabel.objects.create(
            batch_query=bq, labeller="rules", model="m", prompt_version="v", label=label, confidence=confidence
        )
    routed = create_derived_batch(parent, "mach-routed", ["3"], purpose="routed", derivation={}, seed=0)
    Routing.objects.create(
        batch=parent,
        routed_batch=routed,
        labeller="rules",
        model="m",
        prompt_version="v",
        target_accuracy=0.9,
        threshold=0.9,
        accepted=["1", "2"],
        to_humans=1,
    )
    annotation_services.publish_batch(routed)
    for name, label in (("ann-a", "n"), ("ann-b", "n"), ("ann-c", "f")):
        user = create_annotator(name, password="pw-secret-123")
        assignment = next_assignment(user, routed)
        (hq,) = assignment.hit.hit_queries.all()
        submit_local_assignment(assignment, {hq.field_name: label})

    runs = [Run.objects.get(name=n) for n in ("a", "c")]
    result = services.label_sensitivity(
        parent, runs, services.ReportSettings(cutoffs=(1,), bootstrap_samples=20), bar=False
    )
    sizes = {key[1]: size for key, size in result.set_sizes.items() if key[0] == "label source"}
    assert sizes == {"crowd only": 1, "machine only": 1, "hybrid": 2}
    rows = result.table[result.table["aggregation"] == "label source"]
    assert set(rows["disputed"]) == {"crowd only", "machine only", "hybrid"}
    hybrid_a = rows[(rows["disputed"] == "hybrid") & (rows["run"] == "a")]
    assert set(hybrid_a["n_queries"]) == {2}
    # The crowd's rows are the crowd's answers alone (the routed query 3): majority/drop is {3}.
    assert result.set_sizes[("majority", "drop")] == 1


@pytest.mark.django_db
@pytest.mark.slow
def test_label_sensitivity_command_dependence_check(batch, tmp_path):
    """--dependence: D = 0 repeats the report on the batch's labels (its label-corrected differences
    against the baseline), every D gets a row per run, metric and cutoff, and the text says so."""
    out, table = tmp_path / "s.csv", tmp_path / "d.csv"
    stdout = io.StringIO()
    call_command(
        "label_sensitivity", "sens", runs="a,b", cutoffs="2", out=str(out), bootstrap=50, dependence="0,1.5",
        baseline="a", dependence_out=str(table), verbosity=0, stdout=stdout,
    )  # fmt: skip
    rows = pd.read_csv(table)
    assert list(rows.columns) == [
        "run", "metric", "variant", "cutoff", "dependence", "difference_corrected", "difference_combined_low",
        "difference_combined_high", "shift", "significant",
    ]  # fmt: skip
    assert set(rows["run"]) == {"b"} and set(rows["dependence"]) == {0.0, 1.5}
    report = services.compute_batch_report(
        batch, list(Run.objects.filter(name__in=["a", "b"]).order_by("name")),
        services.ReportSettings(cutoffs=(2,), bootstrap_samples=50), baseline=Run.objects.get(name="a"), bar=False,
    ).summary.set_index(["run", "metric", "variant", "cutoff"])  # fmt: skip
    plain = rows[rows["dependence"] == 0.0]
    assert len(plain) == len(rows) / 2 and (plain["shift"] == 0).all()
    for row in plain.itertuples(index=False):
        expected = report.loc[(row.run, row.metric, row.variant, row.cutoff), "difference_corrected"]
        assert row.difference_corrected == pytest.approx(expected, abs=1e-12, nan_ok=True)
    assert "If labelling errors depend on the rankings" in stdout.getvalue()
    with pytest.raises(CommandError, match="bad dependence"):
        call_command("label_sensitivity", "sens", runs="a,b", out=str(out), dependence="x", verbosity=0)
    with pytest.raises(CommandError, match="--baseline zz is not one of"):
        call_command("label_sensitivity", "sens", runs="a,b", out=str(out), dependence="1", baseline="zz", verbosity=0)


@pytest.mark.parametrize(
    "typed, problem",
    [("x", "not a decimal number"), ("nan", "not a decimal number"), ("1e1", "at most 5"),
     ("١", "not a decimal number"), ("6", "at most 5"), ("-5.5", "at least -5"), (",".join("0" * 11), "at most 10")],
)  # fmt: skip
def test_dependences_are_plain_bounded_decimals(typed, problem):
    from core.errors import ServiceError

    with pytest.raises(ServiceError, match=problem):
        services.parse_dependences(typed)
    assert services.parse_dependences(" 0, -0.5 ,1,,") == (0.0, -0.5, 1.0)


@pytest.mark.django_db
@pytest.mark.parametrize("ties", ["tie-aware", "file"])
def test_label_sensitivity_takes_the_order_of_ties_as_a_report_does(batch, tmp_path, ties):
    # A run whose queries 1 and 2 tie d1 (f = 3) with d2 (m = 3) at the top, in the file's order d2 first:
    # RaB@1 of query 1 is +ln 4 in the file's order, 0 tie-aware (the mean of -ln 4 and +ln 4).
    path = tmp_path / "tied.trec"
    path.write_text("1 Q0 d2 1 5 t\n1 Q0 d1 2 5 t\n2 Q0 d2 1 5 t\n2 Q0 d1 2 5 t\n")
    call_command("import_run", str(path), name="tied", collection="tiny", order="file", verbosity=0)
    out = tmp_path / "s.csv"
    call_command(
        "label_sensitivity", "sens", runs="tied", cutoffs="1", out=str(out), bootstrap=20, ties=ties, verbosity=0
    )
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    (rab,) = [
        r
        for r in rows
        if (r["aggregation"], r["disputed"], r["metric"], r["variant"]) == ("majority", "drop", "RaB", "tf")
    ]
    # majority/drop keeps queries 1 and 2, both with the tie on top.
    expected = 0.0 if ties == "tie-aware" else math.log(4)
    assert float(rab["value"]) == pytest.approx(expected, abs=1e-12)
    with pytest.raises(CommandError):
        call_command("label_sensitivity", "sens", runs="tied", ties="random", out=str(out), verbosity=0)


def test_an_undefined_shift_is_printed_as_undefined_and_said_why():
    """A replicate batch whose label-corrected difference is undefined (``class_means`` gives NaN: no query with a
    value, or an ill-conditioned fit) leaves the shift undefined: the text prints – there, as it does for the
    interval, never ``nan``, and its note says what it means."""
    from genderbias.crowd.label_dependence import DEPENDENCE_COLUMNS
    from genderbias.crowd.sensitivity import LabelSensitivity
    from metrics.formatting import dependence_text

    table = pd.DataFrame(
        [["b", "rRD", "female", 10, 0.5, 0.01, -0.02, 0.04, 0.003, False],
         ["b", "rRD", "female", 10, 1.0, None, None, None, float("nan"), None]],
        columns=DEPENDENCE_COLUMNS,
    )  # fmt: skip
    result = LabelSensitivity("s", ["a", "b"], [10], 0.5, pd.DataFrame(), pd.DataFrame(), {}, "", table, "a")
    lines = dependence_text(result).splitlines()
    assert "nan" not in "\n".join(lines).lower()
    assert lines[-2].split()[4] == "+0.0030" and lines[-1].split()[3:6] == ["–", "–", "[–,"]
    assert "A shift printed – is undefined" in lines[1]

"""Every label-based figure on a batch where a worker answered the same question more than once.

Real batches do this: an annotator meets the batch's gold question in every HIT, and a query can
be answered again by the same worker (a re-offered place). The rule
(:func:`genderbias.crowd.aggregation.one_answer_per_worker`): the latest answer to a real query
counts, every answer to a gold question counts. Before it, the report on the batch's labels and
label sensitivity failed with "N judgments repeat an (item, worker) pair".

The batch is built through the real services (in-house handout and submission), the figures read
from the site and the command line.
"""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import numpy as np
import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation import services as annotation_services
from annotation.crowd.services.batch_settings import GoldQuery
from annotation.models import Assignment, Judgment
from annotation.results.selectors.gold import gold_judgments
from annotation.results.selectors.labels import judgments_frame
from core.models import Job
from genderbias.crowd import class_means
from metrics import services
from metrics.models import Report
from metrics.selectors import report_labels, report_summary
from platforms.inhouse.services.annotators import create_annotator
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from pooling.models import QuerySet

# Per annotator: the answer to each real query, and to the gold question (true label f) in each HIT.
ANSWERS = {
    "rep-a": {"1": "n", "2": "n", "3": "m", "g1": "f"},
    "rep-b": {"1": "n", "2": "n", "3": "f", "g1": "f"},
    "rep-c": {"1": "f", "2": "n", "3": "m", "g1": "n"},
}


def _answer(user, batch, answers):
    while (assignment := next_assignment(user, batch)) is not None:
        fields = {
            hq.field_name: answers[hq.batch_query.qid]
            for hq in assignment.hit.hit_queries.select_related("batch_query")
        }
        submit_local_assignment(assignment, fields)


@pytest.fixture
def repeated(world):
    """Three annotators, one query per HIT plus the gold question in every HIT (each meets it three
    times); then rep-a answers query 1 again, "m", in a later assignment (a re-offer)."""
    options = {
        "provider": "local",
        "assignments_per_query": 3,
        "queries_per_hit": 1,
        "gold_per_hit": 1,
        "gold_pass_fraction": 0.5,
        "reward": Decimal("0.05"),
    }
    batch = annotation_services.create_batch(
        "rep",
        annotation_services.BatchSettings(**options),
        query_set=QuerySet.objects.get(name="q"),
        gold=[GoldQuery("g1", "what is a mother", "f")],
    )
    annotation_services.publish_batch(batch)
    users = {name: create_annotator(name, password="pw-secret-123") for name in ANSWERS}
    for name, answers in ANSWERS.items():
        _answer(users[name], batch, answers)
    # Query 1 offered again in a later HIT (as an escalation or a re-offered place does), taken by rep-a,
    # who now answers "m" where the first answer was "n".
    from annotation.models import BatchQuery, Hit, HitQuery

    query = BatchQuery.objects.get(batch=batch, qid="1")
    hit = Hit.objects.create(batch=batch, position=99, unique_token="again-1", max_assignments=1)
    HitQuery.objects.create(hit=hit, batch_query=query, position=1)
    worker = Assignment.objects.filter(hit__batch=batch, worker__pseudonym__isnull=False).first().worker
    first = Judgment.objects.get(batch_query=query, assignment__worker=worker)
    again = Assignment.objects.create(
        hit=hit, worker=worker, status=Assignment.Status.SUBMITTED, provider_assignment_id="again-1"
    )
    Judgment.objects.create(assignment=again, batch_query=query, label="m" if first.label != "m" else "f")
    worker = worker.pseudonym
    batch.refresh_from_db()
    return batch, worker


SETTINGS = services.ReportSettings(cutoffs=(1, 2), bootstrap_samples=100, seed=3)


@pytest.mark.django_db
def test_the_batch_really_repeats_answers_and_the_latest_counts(repeated):
    batch, worker = repeated
    gold = gold_judgments(batch)
    assert gold.duplicated(["item", "worker"]).any()  # the same gold question answered again and again
    frame = judgments_frame(batch)
    assert frame.duplicated(["item", "worker"]).any()  # the re-offered query too
    from annotation.results.selectors.labels import BatchAnswers

    votes = BatchAnswers(batch).votes
    # Query 1: the later answer replaced that worker's earlier one: one vote per worker.
    assert votes.loc["1", "votes"] == frame[frame["item"] == "1"]["worker"].nunique()
    answers = frame[(frame["item"] == "1") & (frame["worker"] == worker)]["label"]
    assert len(answers) == 2  # both in the frame, in the order answered; the aggregators keep the latest
    first, latest = answers.iloc[0], answers.iloc[-1]
    expected = {label: int(votes.loc["1", label]) for label in "nfmo"}
    others = frame[(frame["item"] == "1") & (frame["worker"] != worker)]["label"].tolist()
    assert expected == {label: others.count(label) + (latest == label) for label in "nfmo"}
    assert first != latest


@pytest.mark.django_db
def test_report_on_the_batch_and_its_export_from_the_command_line(repeated, world, tmp_path):
    batch, _ = repeated
    out = tmp_path / "per-query.csv"
    stdout = io.StringIO()
    call_command(
        "bias_report",
        from_batch=batch.name,
        runs="a,b,c",
        baseline="a",
        cutoffs="1,2",
        bootstrap=100,
        seed=3,
        name="rep-report",
        per_query=str(out),
        verbosity=0,
        stdout=stdout,
    )
    report = Report.objects.get(name="rep-report")
    assert "With the labels' uncertainty" in stdout.getvalue()
    assert "bits about the true label per answer" in stdout.getvalue()
    assert report.crowd_quality["answers"] > 0
    # The export holds every judged query with its label probabilities, not only the set's ...
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert {r["qid"] for r in rows} == set(report_labels(report)["qid"]) == {"1", "2", "3"}
    assert "in_set" in rows[0], out.read_text()[:300]
    assert {r["in_set"] for r in rows} == {"true", "false"}
    for r in rows:
        assert sum(float(r[f"p_{c}"]) for c in "nfmo") == pytest.approx(1.0, abs=1e-9)
    # ... and recomputing the corrected figures from it alone gives the report's (docs/metrics.md).
    recomputed = recompute_from_export(rows)
    summary = report_summary(report).set_index(["run", "metric", "variant", "cutoff"])
    for key, (corrected, difference) in recomputed.items():
        assert corrected == pytest.approx(summary.loc[key, "corrected"], abs=1e-9, nan_ok=True)
        if key[0] != "a":
            assert difference == pytest.approx(summary.loc[key, "difference_corrected"], abs=1e-9, nan_ok=True)


def recompute_from_export(rows: list[dict]) -> dict[tuple, tuple[float, float]]:
    """docs/metrics.md, "Recomputing the corrected figures from the export", step by step: per
    (metric, variant, cutoff), the probability matrix P of the judged queries (one row each), the
    label map (which labels get a mean of their own), and the least-squares class mean of n for each
    run's values and for each run's difference with the baseline (the rows of ``baseline`` = a)."""
    import pandas as pd

    frame = pd.DataFrame(rows)
    frame["value"] = pd.to_numeric(frame["value"], errors="coerce")
    probabilities = frame.drop_duplicates("qid").set_index("qid")[[f"p_{c}" for c in "nfmo"]].astype(float)
    probabilities.columns = list("nfmo")
    p, n_column, row_weights = class_means.design(probabilities)
    out = {}
    for (metric, variant, cutoff), part in frame.groupby(["metric", "variant", "cutoff"]):
        wide = part.pivot(index="qid", columns="run", values="value").reindex(probabilities.index)
        for run in wide.columns:
            corrected = class_means.class_means(p, wide[run].to_numpy(), row_weights=row_weights)[n_column, 0]
            difference = class_means.class_means(p, (wide[run] - wide["a"]).to_numpy(), row_weights=row_weights)[
                n_column, 0
            ]
            out[(run, metric, variant, int(cutoff))] = (float(corrected), float(difference))
    return out


@pytest.mark.django_db
@pytest.mark.slow
def test_report_and_label_sensitivity_from_the_site(
    repeated, client, django_user_model, django_capture_on_commit_callbacks, per_query_csv
):
    batch, _ = repeated
    staff = django_user_model.objects.create_user("boss", password="pw-secret-123", is_staff=True)
    client.force_login(staff)
    data = {"name": "rep-site", "batch": batch.name, "runs": ["a", "b"], "baseline": "a", "cutoffs": "1,2"}
    data |= {"tokenizer": "words", "bootstrap": "100"}
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("metrics:report-create"), data)
    job = Job.objects.get(kind="report")
    assert job.status == Job.Status.DONE, job.message
    page = client.get(reverse("metrics:report-detail", args=["rep-site"]))
    assert page.status_code == 200 and 'id="labels-table"' in page.content.decode()
    export = per_query_csv(client, "rep-site")
    assert set(row["qid"] for row in csv.DictReader(io.StringIO(export))) == {"1", "2", "3"}
    api = client.get("/api/metrics/reports/rep-site/").json()
    assert api["crowd_quality"]["workers"] == 3
    sensitivity = {"batch": batch.name, "runs": ["a", "b"], "cutoffs": "1,2", "bootstrap": "20", "threshold": "0.9"}
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("metrics:label-sensitivity"), sensitivity)
    job = Job.objects.get(kind="label-sensitivity")
    assert job.status == Job.Status.DONE, job.message
    assert client.get(job.result["url"]).status_code == 200
    # The batch's own pages read the same answers: the agreement page.
    assert client.get(reverse("annotation:batch-agreement", args=[batch.name])).status_code == 200


@pytest.mark.slow
@pytest.mark.django_db
def test_label_sensitivity_from_the_command_line(repeated, tmp_path):
    batch, _ = repeated
    out = tmp_path / "s.csv"
    call_command("label_sensitivity", batch.name, runs="a,b,c", cutoffs="1,2", out=str(out), bootstrap=20,
                 verbosity=0, stdout=io.StringIO())  # fmt: skip
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert {r["aggregation"] for r in rows} >= {"majority", "dawid-skene", "wawa"}
    assert np.isfinite([float(r["value"]) for r in rows if r["value"]]).all()

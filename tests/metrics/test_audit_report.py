"""A report on a batch's labels with an expert audit sample (issue 81): its label-corrected figures get the
PPI++ interval on the audit (genderbias.machine.proportions, checked here against ppi_py inverted on a grid),
and the page, the CSV, the API and the paper show that figure and the one sentence that says why; where the
shared-errors check fires without an audit, no surface prints the figure as a 95% interval."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest
from django.utils import timezone
from ppi_py import ppi_mean_ci
from scipy.stats import t as student_t

from annotation.models import AuditItem, AuditSample
from genderbias.crowd import figure_intervals
from genderbias.machine.proportions import audit_class_mean, audit_difference
from metrics import formatting, services
from metrics.models import Report, Result
from metrics.selectors import report_judged_values, report_labels, report_summary
from pooling.models import Run
from publishing.services.paper import paper_files

SETTINGS = services.ReportSettings(cutoffs=(1, 2), bootstrap_samples=50, seed=3)
#: The expert's labels of the batch's three queries (tests/metrics/conftest.py: the crowd says n, n, disputed).
EXPERT = {"1": "n", "2": "n", "3": "f"}
SENTENCE = "PPI++ on an audit sample of 3 expert labels: rests on no crowd model"


def _audit(batch, labels):
    sample = AuditSample.objects.create(batch=batch, seed=1, size=len(labels), population=3, drawn_at=timezone.now())
    for i, (qid, label) in enumerate(labels.items()):
        AuditItem.objects.create(
            sample=sample, batch_query=batch.queries.get(qid=qid), draw_index=i, label=label,
            labelled_at=timezone.now(),
        )  # fmt: skip


def _ppi_inverted(v, truth_n, predicted_n, audited, step=0.0005):
    """ppi-python's ppi_mean_ci of (v − θ) · 1(T = n) (λ tuned at each θ), inverted on a grid of θ over the
    values' range: the reference the report's interval must match. The library's quantile is Student's t on the
    audit's n queries less one; ppi_py's is normal, so it gets the alpha whose normal quantile that is."""
    alpha = 2 * (1 - NormalDist().cdf(student_t.ppf(0.975, truth_n.sum() - 1)))
    kept = []
    for theta in np.arange(v.min(), v.max() + step, step):
        yhat = (v - theta) * predicted_n
        lo, hi = ppi_mean_ci((v[audited] - theta) * truth_n, yhat[audited], yhat, alpha=alpha)
        if lo[0] <= 0 <= hi[0]:
            kept.append(theta)
    return min(kept), max(kept)


@pytest.fixture
def audited_report(batch, world):
    _audit(batch, EXPERT)
    runs = [Run.objects.get(name=n) for n in ("a", "b", "c")]
    return services.build_batch_report("audited", batch, runs, SETTINGS, baseline=runs[0], bar=False)


@pytest.mark.django_db
def test_a_report_with_an_audit_sample_gives_the_ppi_interval_on_every_surface(audited_report, client, admin_user):
    report = Report.objects.get(name="audited")
    assert report.label_interval["kind"] == "audit" and report.interval_sentence == SENTENCE
    assert report.methods["figure_interval"] == "2026-11-29"
    labels = report_labels(report).set_index("qid")
    qids = list(labels.index)
    predicted = [None if pd.isna(labels.loc[q, "label"]) else labels.loc[q, "label"] for q in qids]
    audited = [qids.index(q) for q in EXPERT]
    truth = list(EXPERT.values())
    values = report_judged_values(report)
    key = dict(metric="ARaB", variant="tf", cutoff=2)

    def run_values(run):
        rows = values[(values["run"] == run) & (values["metric"] == key["metric"])]
        rows = rows[(rows["variant"] == key["variant"]) & (rows["cutoff"] == key["cutoff"])]
        return rows.set_index("qid").reindex(qids)["value"].to_numpy(dtype=float)

    a, c = run_values("a"), run_values("c")
    # A query without a value (a run returned nothing for it) is left out of the batch and of the audit.
    assert np.isfinite(a).all() and np.isfinite(c).all()
    mean = audit_class_mean(truth, predicted, audited, a, label="n")
    difference = audit_difference(truth, predicted, audited, a, c, label="n")
    row = Result.objects.get(report=report, run__name="a", **key)
    assert [row.combined_low, row.combined_high] == pytest.approx(mean["ci"], abs=1e-9)
    assert row.corrected == pytest.approx(mean["estimate"], abs=1e-9)
    against = Result.objects.get(report=report, run__name="c", **key)
    assert [against.difference_combined_low, against.difference_combined_high] == pytest.approx(
        difference["ci"], abs=1e-9
    )
    # Independent of the code under test: ppi-python's PPI++ inverted on a grid gives the same intervals.
    truth_n = np.array([t == "n" for t in truth], dtype=float)
    predicted_n = np.array([p == "n" for p in predicted], dtype=float)
    lo, hi = _ppi_inverted(a, truth_n, predicted_n, audited)
    assert row.combined_low == pytest.approx(lo, abs=0.001) and row.combined_high == pytest.approx(hi, abs=0.001)
    lo, hi = _ppi_inverted(c - a, truth_n, predicted_n, audited)
    assert against.difference_combined_low == pytest.approx(lo, abs=0.001)
    assert against.difference_combined_high == pytest.approx(hi, abs=0.001)

    client.force_login(admin_user)
    page = client.get(f"/metrics/{report.name}/?lcutoff=2").content.decode()
    assert f"{SENTENCE}." in page and f"[{row.combined_low:.4f}, {row.combined_high:.4f}]" in page
    csv = client.get(f"/metrics/{report.name}/results.csv").content.decode()
    line = next(x for x in csv.splitlines() if x.startswith("a,ARaB,tf,2,"))
    assert repr(row.combined_low) in line and f"label-corrected interval: {SENTENCE}" in line
    api = client.get(f"/api/metrics/reports/{report.name}/").json()
    assert api["label_interval"]["sentence"] == SENTENCE and api["label_interval"]["kind"] == "audit"
    shown = next(r for r in api["results"] if r["run"] == "a" and all(r[k] == v for k, v in key.items()))
    assert shown["combined_low"] == row.combined_low and f"label-corrected interval: {SENTENCE}" in shown["notes"]
    assert api["significance"]["label_interval"] == SENTENCE
    assert api["significance"]["test"].startswith("PPI++ test of the label-corrected paired difference")
    files = paper_files(report, screenshots=False)
    methods_tex = files["methods.tex"].decode().replace("\n", " ")
    assert f"Label-corrected intervals: {SENTENCE}." in methods_tex
    assert "refitted in every bootstrap resample" not in methods_tex  # the crowd model's interval is not the one
    table = files["table-labels.tex"].decode()
    assert f"Corrected intervals: {SENTENCE}." in table.replace("\n", " ")
    assert "PPI++ test of the label-corrected paired difference" in table.replace("\n", " ")
    half = (row.combined_high - row.combined_low) / 2
    assert f"$\\pm {half:.4f}$" in table


@pytest.mark.django_db
def test_without_an_audit_a_firing_check_prints_no_95_interval(batch, world, client, admin_user, monkeypatch):
    monkeypatch.setattr(figure_intervals, "shared_errors_verdict", lambda model: {"fires": True, "suggested_audit": 50})
    runs = [Run.objects.get(name=n) for n in ("a", "b", "c")]
    report = services.build_batch_report("warned", batch, runs, SETTINGS, baseline=runs[0], bar=False)
    sentence = "may not cover: errors shared by query; an audit sample of about 50 would settle it"
    assert report.label_interval["kind"] == "may_not_cover" and report.interval_sentence == sentence
    rows = Result.objects.filter(report=report)
    assert all(r.combined_low is None and r.difference_combined_low is None and r.p_value is None for r in rows)
    assert any(r.corrected is not None for r in rows)
    client.force_login(admin_user)
    page = client.get(f"/metrics/{report.name}/?lcutoff=2").content.decode()
    assert f"{sentence}." in page and '<span class="ci">may not cover</span>' in page
    csv = client.get(f"/metrics/{report.name}/results.csv").content.decode()
    assert all(sentence in x for x in csv.splitlines()[1:] if x.split(",")[0] in ("a", "b", "c") and ",," not in x[:40])
    api = client.get(f"/api/metrics/reports/{report.name}/").json()
    assert api["label_interval"]["kind"] == "may_not_cover"
    assert all(r["combined_low"] is None and r["combined_high"] is None for r in api["results"])
    files = paper_files(report, screenshots=False)
    table = files["table-labels.tex"].decode()
    assert "(may not cover)" in table and sentence in table.replace("\n", " ")
    text = formatting.uncertainty_table(report_summary(report), 2, kind="may_not_cover")
    assert "with labels 95%" not in text and "may not cover" in text


@pytest.mark.django_db
def test_without_an_audit_or_a_warning_the_crowd_models_interval_stays(batch, world, monkeypatch):
    monkeypatch.setattr(figure_intervals, "shared_errors_verdict", lambda model: {"fires": False})
    runs = [Run.objects.get(name=n) for n in ("a", "b", "c")]
    report = services.build_batch_report("plain-crowd", batch, runs, SETTINGS, baseline=runs[0], bar=False)
    assert report.label_interval["kind"] == "crowd"
    assert report.interval_sentence == (
        "crowd model (Dawid-Skene, gold-seeded): assumes independent errors; no audit sample"
    )

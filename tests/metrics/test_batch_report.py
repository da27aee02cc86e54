"""A report on a batch's labels: the same values as a report on the exported set, plus intervals
that carry the labels' uncertainty, stored, read back, and served."""

from __future__ import annotations

import pytest

from annotation.results.services.exports import export_queries
from metrics import services
from metrics.models import Report, Result
from metrics.selectors import report_judged_values, report_labels, report_per_query, report_summary
from pooling.models import QuerySet, Run

SETTINGS = services.ReportSettings(cutoffs=(1, 2), bootstrap_samples=200, seed=3)


@pytest.fixture
def runs(world):
    return [Run.objects.get(name=n) for n in ("a", "b", "c")]


@pytest.mark.django_db
def test_values_equal_a_report_on_the_exported_set_and_p_follows_the_combined_test(batch, runs, tmp_path):
    export_queries(batch, "non-gendered", tmp_path / "ng.tsv", as_query_set="ng")
    plain = services.build_report("plain", QuerySet.objects.get(name="ng"), runs, SETTINGS, baseline=runs[0], bar=False)
    on_batch = services.build_batch_report("on-batch", batch, runs, SETTINGS, baseline=runs[0], bar=False)
    assert on_batch.on_batch and on_batch.label_batch == batch
    assert set(on_batch.query_set.queries.values_list("qid", flat=True)) == {"1", "2"}
    assert on_batch.query_set.name == "on-batch-non-gendered"
    before = {(r.run.name, r.metric, r.variant, r.cutoff): r for r in Result.objects.filter(report=plain)}
    after = {(r.run.name, r.metric, r.variant, r.cutoff): r for r in Result.objects.filter(report=on_batch)}
    assert before.keys() == after.keys()
    for key, row in after.items():
        assert (row.value, row.ci_low, row.ci_high, row.queries) == (
            before[key].value,
            before[key].ci_low,
            before[key].ci_high,
            before[key].queries,
        )
        assert row.query_p_value == before[key].p_value  # the t-test's, kept beside
        if key[0] != "a" and row.difference_combined_low is not None:
            excludes = row.difference_combined_low > 0 or row.difference_combined_high < 0
            assert row.p_value is None or (row.p_value < 0.05) <= excludes  # Holm only raises p
    assert any(row.combined_low is not None for row in after.values())
    # The per-query values the pages read are the set's; every judged query's are kept for the intervals.
    assert set(report_per_query(on_batch)["qid"]) == {"1", "2"}
    assert set(report_judged_values(on_batch)["qid"]) == {"1", "2", "3"}
    labels = report_labels(on_batch).set_index("qid")
    assert labels.loc["3", "in_set"] == False  # noqa: E712 (numpy bool)
    assert labels.loc["3", ["n", "f", "m", "o"]].sum() == pytest.approx(1.0)
    assert 0 < labels.loc["1", "n"] < 1  # two votes of three: not certain
    summary = report_summary(on_batch)
    assert {"combined_low", "label_share", "query_p_value"} <= set(summary.columns)


@pytest.mark.django_db
def test_a_ruling_makes_its_query_certain(batch, runs, django_user_model):
    from annotation.quality.services.adjudication import adjudicate

    researcher = django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True)
    adjudicate(batch, "3", "n", "asks about no one in particular", researcher)
    report = services.build_batch_report("ruled", batch, runs, SETTINGS, bar=False)
    labels = report_labels(report).set_index("qid")
    assert labels.loc["3", "n"] == 1.0 and labels.loc["3", "source"] == "adjudicated"
    assert set(report_per_query(report)["qid"]) == {"1", "2", "3"}


@pytest.mark.django_db
def test_nothing_is_left_behind_when_the_name_is_taken_or_nothing_is_non_gendered(batch, runs):
    services.build_batch_report("taken", batch, runs, SETTINGS, bar=False)
    with pytest.raises(services.ServiceError, match="already exists"):
        services.build_batch_report("taken", batch, runs, SETTINGS, bar=False)
    QuerySet.objects.create(name="clash-non-gendered", origin=QuerySet.Origin.IMPORTED)
    with pytest.raises(services.ServiceError, match="clash-non-gendered"):
        services.build_batch_report("clash", batch, runs, SETTINGS, bar=False)
    assert not Report.objects.filter(name="clash").exists()

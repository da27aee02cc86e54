"""Reports end to end: services, the bias_report / crbo / counterfactual_collection commands."""

import csv
import gzip
import io
import math

import pytest
from django.core.management import CommandError, call_command

from core.errors import ServiceError
from metrics import selectors, services
from metrics.models import Report, Result
from pooling.models import QuerySet, Run
from tests.support.per_query_text import per_query_csv


def log2(x):
    return math.log(x) / math.log(2)


def build(name="r", runs=("a", "b"), **kwargs):
    return services.build_report(
        name, QuerySet.objects.get(name="q"), [Run.objects.get(name=n) for n in runs], bar=False, **kwargs
    )


def value(report, run, metric, variant, cutoff):
    return Result.objects.get(report=report, run__name=run, metric=metric, variant=variant, cutoff=cutoff)


@pytest.mark.django_db
def test_build_report_stores_means_over_the_queries_each_run_contains(world):
    report = build(report_settings=services.ReportSettings(cutoffs=(1, 2), bootstrap_samples=50))
    assert report.run_order == ["a", "b"]
    assert report.wordlist.name.startswith("genderspecific")
    assert report.software_version.startswith("genderbias ")
    # run a, RaB@1 [tf]: q1 d1 → −ln 4; q2 d3 → 0; q3 d2 → ln 4
    rab = value(report, "a", "RaB", "tf", 1)
    assert rab.queries == 3
    assert rab.value == pytest.approx((-math.log(4) + 0 + math.log(4)) / 3, abs=1e-9)
    assert rab.ci_low <= rab.value <= rab.ci_high
    # run b lacks query 3; its query 4 is not in the set: 2 queries
    nfairr = value(report, "b", "NFaiRR", "collection", 2)
    assert nfairr.queries == 2
    ideal = 1 + 1 / log2(3)
    # q1: d3 (neutral), d1 (one-sided) → 1/ideal; q2: d2 only (one-sided) → 0
    assert nfairr.value == pytest.approx((1 / ideal + 0) / 2, abs=1e-9)
    assert Result.objects.filter(report=report).count() == 2 * (2 * 2 * 2 + 2 + 2 * 2 + 4 * 2 + 2 * 2)  # + EE, GFR
    per_query = selectors.report_per_query(report)
    assert set(per_query.columns) == {"run", "qid", "metric", "variant", "cutoff", "value", "low", "high", "tied"}
    assert set(per_query.loc[per_query["run"] == "b", "qid"]) == {"1", "2"}


@pytest.mark.django_db
def test_report_errors(world):
    with pytest.raises(ServiceError, match="cutoffs"):
        build(report_settings=services.ReportSettings(cutoffs=(0,)))
    build("taken", runs=("a",), report_settings=services.ReportSettings(cutoffs=(1,), bootstrap_samples=10))
    with pytest.raises(ServiceError, match="already exists"):
        build("taken", runs=("a",))
    assert Report.objects.count() == 1


@pytest.mark.django_db
def test_baseline_is_tested_and_background_run_used(world):
    report = build(
        runs=("a", "c"),
        baseline=Run.objects.get(name="a"),
        background=Run.objects.get(name="c"),
        report_settings=services.ReportSettings(cutoffs=(2,), bootstrap_samples=20),
    )
    assert report.background == "c"
    assert value(report, "a", "NFaiRR", "c", 2).p_value is None  # the baseline itself
    tested = Result.objects.filter(report=report, run__name="c").exclude(p_value=None)
    assert tested.exists()
    assert all(0 <= r.p_value <= 1 for r in tested)
    # with the background run, NFaiRR never exceeds 1
    assert all(r.value <= 1 + 1e-12 for r in Result.objects.filter(report=report, metric="NFaiRR"))
    assert report.nfairr_normaliser == "comparison"
    assert "together with every run" in report.nfairr_normalisation


@pytest.mark.django_db
def test_per_query_csv_carries_the_reports_cis_and_p_values(world):
    report = build(
        runs=("a", "c"),
        baseline=Run.objects.get(name="a"),
        report_settings=services.ReportSettings(cutoffs=(2,), bootstrap_samples=20),
    )
    rows = list(
        csv.DictReader(io.StringIO(per_query_csv(selectors.report_per_query(report), selectors.report_summary(report))))
    )
    assert list(rows[0]) == [
        "run",
        "qid",
        "metric",
        "variant",
        "cutoff",
        "value",
        "mean",
        "ci_low",
        "ci_high",
        "p_value",
        "significance",  # issue 26.8: the CSV states how its p-values were made
    ]
    for row in rows:
        result = value(report, row["run"], row["metric"], row["variant"], int(row["cutoff"]))
        assert float(row["mean"]) == pytest.approx(result.value, abs=1e-12)
        assert float(row["ci_low"]) == pytest.approx(result.ci_low, abs=1e-12)
        assert float(row["ci_high"]) == pytest.approx(result.ci_high, abs=1e-12)
        assert row["p_value"] == ("" if result.p_value is None else row["p_value"])
        if result.p_value is not None:
            assert float(row["p_value"]) == pytest.approx(result.p_value, abs=1e-12)
    assert any(row["p_value"] for row in rows if row["run"] == "c")


@pytest.mark.django_db
def test_exact_nfairr_normaliser_is_the_background_alone(world, tmp_path):
    # Background c: q1 {d4, d3}, q2 {d4, d3}, q3 {d3, d4}: every query's ideal is two neutral documents.
    report = build(
        "exact",
        runs=("a",),
        background=Run.objects.get(name="c"),
        report_settings=services.ReportSettings(cutoffs=(2,), bootstrap_samples=10, nfairr_normaliser="exact"),
    )
    assert report.nfairr_normaliser == "exact"
    ideal = 1 + 1 / log2(3)
    # a: q1 d1 (one-sided), d3 → 1/log2(3); q2 d3, d4 → ideal; q3 d2, d1 → 0
    result = value(report, "a", "NFaiRR", "c:exact", 2)
    assert result.value == pytest.approx((1 / log2(3) / ideal + 1 + 0) / 3, abs=1e-12)
    with pytest.raises(services.ServiceError, match="normaliser"):
        build("bad", runs=("a",), report_settings=services.ReportSettings(cutoffs=(2,), nfairr_normaliser="own"))


@pytest.mark.django_db
@pytest.mark.slow
def test_bias_report_command_writes_csv_table_and_plot(world, tmp_path):
    out, per_query, plot = tmp_path / "r.csv", tmp_path / "pq.csv", tmp_path / "r.png"
    stdout = io.StringIO()
    call_command(
        "bias_report",
        queries="q",
        runs="a,b",
        cutoffs="2,1",
        out=str(out),
        per_query=str(per_query),
        plot=str(plot),
        bootstrap=20,
        verbosity=0,
        stdout=stdout,
    )
    text = stdout.getvalue()
    assert "RaB [tf]" in text and "TExFAIR [plain]" in text and "NFaiRR [collection]" in text
    lines = out.read_text().splitlines()
    assert lines[0] == "run,metric,variant,cutoff,value,queries,tie_low,tie_high,ties,notes"
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert {(r["metric"], r["variant"]) for r in rows} == {
        ("RaB", "tf"),
        ("RaB", "bool"),
        ("ARaB", "tf"),
        ("ARaB", "bool"),
        ("NFaiRR", "collection"),
        ("TExFAIR", "rbdf"),
        ("TExFAIR", "plain"),
        ("AWRF", "dcg"),
        ("rKL", "female"),
        ("rND", "female"),
        ("rRD", "female"),
        ("EE", "rbp0.5"),
        ("GFR", "jsd"),
    }
    assert {r["cutoff"] for r in rows} == {"1", "2"}
    header = "run,qid,metric,variant,cutoff,value,mean,ci_low,ci_high,p_value,significance\n"
    assert per_query.read_text().startswith(header)
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert Report.objects.get().name == "q-a-b"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"queries": "nope", "runs": "a"}, "no query set named 'nope'"),
        ({"queries": "q", "runs": "a,zz"}, "unknown run"),
        ({"queries": "q", "runs": "a", "cutoffs": "5,x"}, "cutoffs: 'x' is not a whole number"),
        ({"queries": "q", "runs": "a", "cutoffs": "0"}, r"cutoffs: must be at least 1 \(got 0\)"),
        ({"queries": "q", "runs": "a", "background": "zz"}, "unknown run"),
        ({"queries": "q", "runs": "a", "name": "x/y z"}, "use letters, digits, hyphens and underscores"),
        ({"queries": "q", "runs": "a", "out": "/nonexistent-folder/bias.csv"}, "folder /nonexistent-folder does not"),
        ({"queries": "q", "runs": "a", "plot": "/nonexistent-folder/bias.png"}, "folder /nonexistent-folder does not"),
    ],
)
def test_bias_report_errors(world, options, message):
    with pytest.raises(CommandError, match=message):
        call_command("bias_report", verbosity=0, **options)
    assert not Report.objects.exists()  # refused before any work, nothing stored


@pytest.mark.django_db
def test_counterfactual_and_crbo_commands(world, tmp_path):
    out = tmp_path / "cf.tsv.gz"
    call_command("counterfactual_collection", collection="tiny", out=str(out), verbosity=0, stdout=io.StringIO())
    call_command("import_collection", str(out), name="tiny-cf", verbosity=0)
    assert gzip.decompress(out.read_bytes()).decode().splitlines()[1] == "d2\tShe met her mother"
    stdout = io.StringIO()
    call_command("crbo", run="a", counterfactual_run="c", stdout=stdout)
    p = 0.9
    # per query both contain (1, 2, 3): a = [d1,d3] vs c = [d4,d3]: X = 0, 1 → RBO = (1−p)/p·(½p²) + ½p²
    q1 = (1 - p) / p * (0 + 1 / 2 * p**2) + 1 / 2 * p**2
    q2 = (1 - p) / p * (0 + 2 / 2 * p**2) + 2 / 2 * p**2  # [d3,d4] vs [d4,d3]
    q3 = 0.0  # [d2,d1] vs [d3,d4]: no overlap
    assert f"{(q1 + q2 + q3) / 3:.4f} over 3 queries" in stdout.getvalue()
    with pytest.raises(CommandError, match="unknown run"):
        call_command("crbo", run="a", counterfactual_run="nope")

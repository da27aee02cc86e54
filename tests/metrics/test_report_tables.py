"""The papers' tables of a stored report: ``bias_report --table``, the API and the page."""

import io

import pytest
from django.core.management import CommandError, call_command

from metrics.models import Report

QRELS = "1 0 d1 2\n1 0 d3 0\n2 0 d4 1\n3 0 d2 1\n"


@pytest.fixture
def judged(world):
    path = world / "qrels.txt"
    path.write_text(QRELS)
    call_command("import_qrels", str(path), name="judged", queries="q", collection="tiny", verbosity=0)


def build(name="tab", **extra):
    stdout = io.StringIO()
    options = {"queries": "q", "runs": "a,c", "cutoffs": "1,2", "qrels": "judged", "measures": "MRR@2,nDCG@2,R@2"}
    call_command("bias_report", **options, bootstrap=20, name=name, verbosity=0, stdout=stdout, **extra)
    return stdout.getvalue()


@pytest.mark.django_db
def test_bias_report_prints_the_table(judged):
    text = build(table="ecir2024", baseline="a")
    assert "Effectiveness and fairness (Abolghasemi et al., ECIR 2024); cutoff 2" in text
    assert "MRR@2" in text and "nDCG@2" in text and "NFaiRR@2" in text and "TExFAIR@2" in text
    assert "r(TExFAIR@2,NFaiRR@2)" in text and "* p < 0.05 against a" in text
    sigir = build("tab2", table="sigir2020", table_cutoff=1)
    assert "Recall@2" in sigir and "RaB[tf]@1" in sigir and "ARaB[bool]@2" in sigir
    with pytest.raises(CommandError, match="no cutoff 7"):
        build("tab3", table="ecir2024", table_cutoff=7)


@pytest.mark.django_db
def test_a_wide_table_and_the_prose_fit_a_terminal(judged):
    from metrics import selectors
    from metrics.formatting import TEXT_WIDTH
    from metrics.models import Report

    text = build("wide", table="sigir2020", baseline="a")
    too_wide = [line for line in text.splitlines() if len(line) > TEXT_WIDTH]
    assert not too_wide
    table = selectors.report_table(Report.objects.get(name="wide"), "sigir2020", baseline="a")
    # Every column and every run's every value is printed, in blocks of columns.
    printed = text[text.index(table["title"]) :]
    assert all(column["label"] in printed for column in table["columns"])
    for row in table["rows"]:
        values = [
            word for line in printed.splitlines() if line.split()[:1] == [row["run"]] for word in line.split()[1:]
        ]
        assert values == [("–" if c["value"] is None else f"{c['value']:.4f}") + c["mark"] for c in row["cells"]], row[
            "run"
        ]


@pytest.mark.django_db
def test_table_api(judged, client, django_user_model):
    build()
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    body = client.get("/api/metrics/reports/tab/table/?layout=ecir2024&baseline=a").json()
    assert body["layout"] == "ecir2024" and body["cutoff"] == 2 and body["baseline"] == "a"
    assert [c["label"] for c in body["columns"]] == ["MRR@2", "nDCG@2", "NFaiRR@2", "TExFAIR@2"]
    rows = {row["run"]: row for row in body["rows"]}
    assert rows["a"]["cells"][0]["value"] == pytest.approx(2.5 / 3)  # RR 1, 1/2, 1 (q3: d2 first)
    assert rows["a"]["cells"][0]["ci_low"] is not None  # the stored bootstrap CI
    # One run against the baseline: MRR@2's family holds one test, so Holm leaves p unadjusted.
    assert rows["c"]["cells"][0]["p_value"] == rows["c"]["cells"][0]["p_raw"] is not None
    assert body["significance"]["correction"] == "Holm" and rows["a"]["cells"][0]["p_value"] is None
    assert rows["a"]["correlations"][0]["a"] == "TExFAIR@2"
    chosen = client.get("/api/metrics/reports/tab/table/?correlate=RR,nDCG&cutoff=1").json()
    assert chosen["correlations"] == [{"a": "MRR@2", "b": "nDCG@2"}] and chosen["cutoff"] == 1
    for bad in ("layout=nature", "cutoff=x", "cutoff=9", "baseline=zz", "correlate=RR"):
        response = client.get(f"/api/metrics/reports/tab/table/?{bad}")
        assert response.status_code == 400 and response.json()["detail"], bad
    assert Report.objects.get(name="tab").baseline is None


@pytest.mark.django_db
def test_page_long_results_filter_svg_plots_and_paper_table(judged, client, django_user_model):
    build(baseline="a")
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    page = client.get("/metrics/tab/").content.decode()
    # RaB, ARaB (tf, bool), NFaiRR, TExFAIR (2), AWRF, rKL, rND, rRD, EE, GFR, RR, nDCG, R
    assert page.count('class="group"') == 16
    assert 'class="ci">[' in page and "metric.svg?metric=RaB&amp;variant=tf" in page
    assert "tradeoff.svg?x=nDCG%3Ajudged%402&amp;y=NFaiRR%3Acollection%402" in page
    only = client.get("/metrics/tab/?metric=nDCG").content.decode()
    assert only.count('class="group"') == 1 and '<th scope="col" class="num">@1</th>' not in only
    table = client.get("/metrics/tab/?layout=ecir2024&baseline=c").content.decode()
    assert "Abolghasemi et al., ECIR 2024" in table and "r(TExFAIR@2, NFaiRR@2)" in table
    assert "against c. Test: two-sided paired t-test" in table and "correction: Holm" in table
    assert "the report has no cutoff 9" in client.get("/metrics/tab/?layout=sigir2020&cutoff=9").content.decode()
    svg = client.get("/metrics/tab/metric.svg?metric=TExFAIR&variant=plain")
    assert svg["Content-Type"] == "image/svg+xml" and b"currentColor" in svg.content
    assert b"prefers-color-scheme: dark" in svg.content
    tradeoff = client.get("/metrics/tab/tradeoff.svg?x=RR:judged@2&y=TExFAIR:rbdf@1")
    assert tradeoff.status_code == 200 and b"<svg" in tradeoff.content
    for bad in ("metric.svg?metric=RaB&variant=zz", "tradeoff.svg?x=RR:judged@2", "pie.svg"):
        assert client.get(f"/metrics/tab/{bad}").status_code == 404, bad

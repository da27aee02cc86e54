"""EE and GFR, each one class in its own module (genderbias.ranking.expected_exposure, .gfr), are on every
report without a line of the platform naming them: its results, its page, its CSV and the API list them,
and each figure is the library's ``calc_aggregate`` of the same run and collection."""

import csv
import io

import pytest
from django.urls import reverse

import genderbias
from tests.metrics.conftest import PASSAGES, RUN_A, RUN_C, write_run


@pytest.fixture
def user_client(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("ana", password="pw-secret-123", is_staff=True))
    return client


@pytest.mark.django_db
def test_ee_and_gfr_are_on_the_report_its_page_csv_and_api_as_the_library_computes_them(user_client, report, tmp_path):
    stored = {(r.run.name, r.metric, r.variant, r.cutoff): r.value for r in report.results.select_related("run")}
    expected = {
        (run, metric, variant, k)
        for run in "ac"
        for metric, variant in (("EE", "rbp0.5"), ("GFR", "jsd"))
        for k in (1, 2)
    }
    assert expected <= set(stored)

    page = user_client.get(reverse("metrics:report-detail", args=["rep"])).content.decode()
    assert 'EE <span class="muted">[rbp0.5]</span>' in page and 'GFR <span class="muted">[jsd]</span>' in page
    rows = list(
        csv.DictReader(io.StringIO(user_client.get(reverse("metrics:report-csv", args=["rep"])).content.decode()))
    )
    assert {(r["run"], r["metric"], r["variant"], int(r["cutoff"])) for r in rows} >= expected
    api = user_client.get("/api/metrics/reports/rep/").json()["results"]
    assert {(r["run"], r["metric"], r["variant"], r["cutoff"]) for r in api} >= expected

    collection = tmp_path / "texts.tsv"
    collection.write_text("".join(f"{pid}\t{text}\n" for pid, text in PASSAGES.items()))
    for name, rankings in (("a", RUN_A), ("c", RUN_C)):
        figures = genderbias.calc_aggregate(
            ["EE@2", "GFR@1", "GFR@2"], write_run(tmp_path / f"{name}.trec", rankings), collection
        )
        assert stored[(name, "EE", "rbp0.5", 2)] == pytest.approx(figures["EE@2"], abs=1e-12)
        assert stored[(name, "GFR", "jsd", 1)] == pytest.approx(figures["GFR@1"], abs=1e-12)
        assert stored[(name, "GFR", "jsd", 2)] == pytest.approx(figures["GFR@2"], abs=1e-12)
    assert any(stored[(run, "GFR", "jsd", 2)] < 1 for run in "ac")  # the tiny world is not trivially fair

"""A report's papers' tables are kept per report and answers version in the ``results`` cache
(:func:`metrics.selectors.report_table`): a second view reads no file and builds nothing, and
what it serves is the table a fresh build gives."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from metrics import selectors
from metrics.models import Report

QRELS = "1 0 d1 2\n1 0 d3 0\n2 0 d4 1\n3 0 d2 1\n"


@pytest.fixture
def report(world) -> Report:
    path = world / "qrels.txt"
    path.write_text(QRELS)
    call_command("import_qrels", str(path), name="judged", queries="q", collection="tiny", verbosity=0)
    options = {"queries": "q", "runs": "a,c", "cutoffs": "1,2", "qrels": "judged", "measures": "MRR@2,nDCG@2"}
    call_command("bias_report", **options, baseline="a", bootstrap=20, name="kept", verbosity=0, stdout=io.StringIO())
    return Report.objects.get(name="kept")


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """Every read of a report's per-query file, by the table's build."""
    seen: list[str] = []
    original = selectors.report_per_query

    def counted(report):
        seen.append(report.name)
        return original(report)

    monkeypatch.setattr(selectors, "report_per_query", counted)
    return seen


@pytest.mark.django_db
def test_a_table_is_built_once_per_choice(report, reads, settings):
    settings.RESULTS_CACHE_SECONDS = 3600
    first = selectors.report_table(report, "sigir2020", cutoff=2)
    again = selectors.report_table(Report.objects.get(pk=report.pk), "sigir2020", cutoff=2)
    assert reads == ["kept"]  # the second view built nothing
    assert again == first
    selectors.report_table(report, "ecir2024", cutoff=2)  # another layout is another table
    selectors.report_table(report, "sigir2020", cutoff=1)  # and another cutoff
    selectors.report_table(report, "sigir2020", cutoff=2, baseline="c")  # and another baseline
    assert reads == ["kept"] * 4
    settings.RESULTS_CACHE_SECONDS = 0  # a fresh build gives what was served
    assert selectors.report_table(report, "sigir2020", cutoff=2) == first


@pytest.mark.django_db
def test_the_report_page_shows_the_kept_table(report, reads, client, django_user_model, settings):
    settings.RESULTS_CACHE_SECONDS = 3600
    researcher = django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True)
    client.force_login(researcher)
    url = reverse("metrics:report-detail", args=[report.name]) + "?layout=sigir2020&cutoff=2"
    first = client.get(url)
    second = client.get(url)
    assert first.status_code == second.status_code == 200
    assert reads.count("kept") == 1
    assert first.context["table"] == second.context["table"] is not None


@pytest.mark.django_db
def test_a_report_of_the_same_name_built_again_gets_its_own_table(report, reads, settings):
    settings.RESULTS_CACHE_SECONDS = 3600
    selectors.report_table(report, "sigir2020", cutoff=2)
    report.delete()
    options = {"queries": "q", "runs": "a,c", "cutoffs": "2", "qrels": "judged", "measures": "MRR@2"}
    call_command("bias_report", **options, baseline="a", bootstrap=20, name="kept", verbosity=0, stdout=io.StringIO())
    rebuilt = Report.objects.get(name="kept")
    table = selectors.report_table(rebuilt, "sigir2020", cutoff=2)
    assert len(reads) == 2  # the new report's table is built, not the old one's served
    settings.RESULTS_CACHE_SECONDS = 0
    assert table == selectors.report_table(rebuilt, "sigir2020", cutoff=2)

"""Requests whose cost grew with the batch (issue 68, measured by ``manage.py benchmark_request_cost``):
the per-query CSV is written by a job, once, and the per-query API makes the rows of one page only."""

import csv
import io

import pytest

from core.models import Job
from metrics import formatting, selectors
from metrics.models import Report
from tests.support.per_query_text import per_query_csv


@pytest.fixture
def researcher(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("ana", password="pw-secret-123", is_staff=True))
    return client


def test_the_per_query_csv_is_written_by_one_job_and_then_served_as_a_file(
    researcher, report, django_capture_on_commit_callbacks, monkeypatch
):
    # What the file must hold, computed before the view is asked (the formatter and the report's reads).
    expected = per_query_csv(
        selectors.report_per_query_export(report),
        selectors.report_summary(report),
        selectors.report_policy_text(report),
    )
    calls = []
    writer = formatting.write_per_query_csv
    monkeypatch.setattr(formatting, "write_per_query_csv", lambda *a, **k: calls.append(1) or writer(*a, **k))
    url = "/metrics/rep/per-query.csv"

    first, again = researcher.get(url), researcher.get(url)  # the job is not run: no commit in this test
    job = Job.objects.get(kind="metrics.per_query_csv")
    assert first.status_code == again.status_code == 302 and first["Location"] == f"/jobs/{job.pk}/"
    assert again["Location"] == first["Location"]  # the same job, joined, not a second one
    assert calls == [] and job.status == Job.Status.PENDING  # the requests computed nothing

    job.delete()
    with django_capture_on_commit_callbacks(execute=True):
        started = researcher.get(url)
    job = Job.objects.get(kind="metrics.per_query_csv")
    assert started.status_code == 302 and job.status == Job.Status.DONE, job.message
    assert calls == [1] and job.result["url"] == url and job.result["download"] == "rep-per-query.csv"

    for _ in range(2):
        served = researcher.get(url)
        assert served.status_code == 200 and served["Content-Type"] == "text/csv; charset=utf-8"
        assert 'filename="rep-per-query.csv"' in served["Content-Disposition"]
        assert b"".join(served.streaming_content).decode() == expected
    assert calls == [1] and Job.objects.count() == 1


def test_the_per_query_csv_of_a_report_whose_files_are_gone_is_a_404(researcher, report):
    from pathlib import Path

    Path(Report.objects.get(name="rep").per_query).unlink()
    assert researcher.get("/metrics/rep/per-query.csv").status_code == 404
    assert not Job.objects.exists()


def test_the_per_query_api_makes_the_rows_of_one_page_only(researcher, report, monkeypatch):
    from rest_framework.pagination import PageNumberPagination

    from metrics import api

    monkeypatch.setattr(PageNumberPagination, "page_size", 5)
    frame = selectors.report_per_query(report)
    asked = []
    rows_of = api._PerQueryRows.__getitem__
    monkeypatch.setattr(api._PerQueryRows, "__getitem__", lambda self, s: asked.append(s) or rows_of(self, s))

    pages, url = [], "/api/metrics/reports/rep/per-query/"
    while url:
        body = researcher.get(url).json()
        assert body["count"] == len(frame)
        pages.append(body["results"])
        url = body["next"]
    assert len(pages) == -(-len(frame) // 5) and all(len(page) <= 5 for page in pages)
    assert all(s.stop - s.start <= 5 for s in asked) and len(asked) == len(pages)
    got = [(r["run"], r["qid"], r["metric"], r["variant"], r["cutoff"]) for page in pages for r in page]
    want = list(frame[["run", "qid", "metric", "variant", "cutoff"]].itertuples(index=False, name=None))
    assert got == [(run, qid, m, v, int(k)) for run, qid, m, v, k in want]
    values = {(r["run"], r["qid"], r["metric"], r["variant"], r["cutoff"]): r["value"] for page in pages for r in page}
    for row in csv.DictReader(io.StringIO(per_query_csv(frame))):
        key = (row["run"], row["qid"], row["metric"], row["variant"], int(row["cutoff"]))
        assert (values[key] is None) == (row["value"] == "")
        if row["value"]:
            assert values[key] == pytest.approx(float(row["value"]))


def test_the_per_query_file_is_written_a_row_at_a_time_in_its_own_bounded_folder(report, settings):
    """The file is about 400 MB at 2,000 labelled queries: written row by row (no write holds more than a
    row), kept apart from the figures (a figure evicted never takes it, and it never evicts a figure), and
    its own folder keeps within PER_QUERY_CACHE_MAX_BYTES, the newest file kept."""
    from metrics import services
    from metrics.services.plot_cache import cached_plot, evict, plot_path
    from pooling.models import QuerySet, Run

    class Handle(io.StringIO):
        longest = 0

        def write(self, text):
            Handle.longest = max(Handle.longest, len(text))
            return super().write(text)

    export, summary = selectors.report_per_query_export(report), selectors.report_summary(report)
    handle = Handle()
    rows = formatting.write_per_query_csv(handle, export, summary, selectors.report_policy_text(report))
    lines = handle.getvalue().splitlines()
    assert rows == len(export) == len(lines) - 1 > 10
    assert Handle.longest <= max(len(line) for line in lines) + 1  # one row (and its newline) at a time

    figure, _ = cached_plot(report, "metric", {"metric": "ARaB", "variant": "tf"}, "svg", lambda: b"<svg/>")
    written = services.build_per_query_csv(report)
    assert written.read_text(encoding="utf-8") == handle.getvalue()  # the file is the writer's rows
    assert plot_path(report, "k", "svg").parent not in written.parents and figure.exists()
    assert evict(max_bytes=0) == 1 and not figure.exists() and written.exists()  # the figures' bound only

    settings.PER_QUERY_CACHE_MAX_BYTES = written.stat().st_size  # room for one file
    other = services.build_report(
        "other", QuerySet.objects.get(name="q"), [Run.objects.get(name="c")],
        services.ReportSettings(cutoffs=(1,), bootstrap_samples=20), bar=False,
    )  # fmt: skip
    newer = services.build_per_query_csv(other)
    assert newer.exists() and not written.exists()  # the older file went, the one just written stayed
    assert services.cached_per_query_csv(report) is None and services.cached_per_query_csv(other) == newer

"""A report's per-query CSV, written once by a background job and then served as a file.

The file has a row per run, query, metric, variant and cutoff (for a report on a batch's labels,
every judged query): it grows with the batch, and writing it took tens of seconds at a few thousand
queries (docs/benchmarks.md, "Requests whose cost grows with the batch"), too long for a request a
viewer can repeat. A report never changes after it is built, so the file is kept beside the
report's figures (:mod:`.plot_cache`, same key and bound): the page's link is a file response
once it is written, and a job writing it before.
"""

from __future__ import annotations

from pathlib import Path

from core.jobs import background_job
from core.models import Job
from genderbias.errors import ServiceError

from ..models import Report
from .plot_cache import cached_plot, plot_key, plot_path

KIND = "per-query"


def cached_per_query_csv(report: Report) -> Path | None:
    """The report's per-query CSV if a job already wrote it, else ``None``."""
    path = plot_path(report, plot_key(report, KIND, {}), "csv")
    return path if path.exists() else None


def build_per_query_csv(report: Report) -> Path:
    """Write the report's per-query CSV (:func:`metrics.formatting.per_query_csv`) into the cache, atomically."""
    from .. import formatting, selectors

    def write() -> bytes:
        return formatting.per_query_csv(
            selectors.report_per_query_export(report),
            selectors.report_summary(report),
            selectors.report_policy_text(report),
        ).encode()

    path, _ = cached_plot(report, KIND, {}, "csv", write)
    return path


@background_job("metrics.per_query_csv", task="metrics.tasks.per_query_csv_task", failures=(ServiceError,))
def per_query_csv_job(job: Job, report_id: int) -> None:
    """Write a report's per-query CSV into the cache (read-only: a redelivery writes it again)."""
    from django.urls import reverse

    report = Report.objects.get(pk=report_id)
    build_per_query_csv(report)
    job.result = {
        "url": reverse("metrics:report-per-query", args=[report.name]),
        "download": f"{report.name}-per-query.csv",  # a file: the job page links it, never redirects to it
        "report": report.name,
    }
    job.message = f"Per-query values of {report.name} ready"


def start_per_query_csv(report: Report) -> Job:
    """The Job writing the report's per-query CSV: the one already pending or running, else a new one.
    ServiceError if the report's files are gone."""
    from .. import selectors

    selectors.check_report_files(report)
    running = Job.objects.filter(
        kind=per_query_csv_job.kind, arguments=[report.pk], status__in=[Job.Status.PENDING, Job.Status.RUNNING]
    ).first()
    return running or per_query_csv_job.start(f"Per-query values of {report.name}", report.pk, of=report)

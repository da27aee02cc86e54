"""A report's per-query CSV, written once by a background job and then served as a file: it grows with the batch,
too slow to write for a request a viewer can repeat (docs/benchmarks.md, "Requests whose cost grows with the
batch"). Keyed as the report's figures are (:mod:`.plot_cache`), but in a folder and under a bound of its own
(``PER_QUERY_CACHE_MAX_BYTES``): one such file would evict every figure (docs/deployment.md).
"""

from __future__ import annotations

from pathlib import Path

from core.errors import ServiceError, StateError
from core.jobs import background_job
from core.models import Job
from core.services.storage import cache_dir
from genderbias.files.atomic import atomic_write

from ..models import Report
from .plot_cache import evict, plot_key

KIND = "per-query"
#: The cache folder of the per-query files (``CACHE_DIR/per-query``), apart from the figures'.
FOLDER = "per-query"


def per_query_path(report: Report) -> Path:
    """Where the report's per-query CSV is kept (the figures' key: report, software and drawing version)."""
    return cache_dir(FOLDER) / f"{report.pk}-{plot_key(report, KIND, {})}.csv"


def cached_per_query_csv(report: Report) -> Path | None:
    """The report's per-query CSV if a job already wrote it, else ``None``."""
    path = per_query_path(report)
    return path if path.exists() else None


def build_per_query_csv(report: Report) -> Path:
    """Write the report's per-query CSV into its folder, atomically and a row at a time, then keep the folder
    within ``PER_QUERY_CACHE_MAX_BYTES``."""
    from django.conf import settings

    from .. import formatting, selectors

    path = per_query_path(report)
    if path.exists():
        return path
    per_query, summary = selectors.report_per_query_export(report), selectors.report_summary(report)
    policy = selectors.report_policy_text(report)
    atomic_write(path, lambda handle: formatting.write_per_query_csv(handle, per_query, summary, policy), newline="")
    evict(settings.PER_QUERY_CACHE_MAX_BYTES, keep=path, folder=FOLDER)
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


def start_per_query_csv(report: Report, *, may_start: bool) -> Job:
    """The Job writing the report's per-query CSV: the one already pending or running, else a new one when
    ``may_start`` (the asker may act on the report; a viewer's GET starts no job: ``StateError``). ServiceError if
    the report's files are gone."""
    from .. import selectors

    selectors.check_report_files(report)
    running = Job.objects.filter(
        kind=per_query_csv_job.kind, arguments=[report.pk], status__in=[Job.Status.PENDING, Job.Status.RUNNING]
    ).first()
    if running is None and not may_start:
        raise StateError(
            f"the per-query values of {report.name} are not written yet, and a viewer's request starts no job: "
            "a researcher or owner of the report's group opens this link once, then the file is kept for everyone"
        )
    return running or per_query_csv_job.start(f"Per-query values of {report.name}", report.pk, of=report)

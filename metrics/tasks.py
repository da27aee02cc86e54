"""Celery tasks of the metrics app: thin shells over services, run as Jobs (:mod:`core.tasks`).

Without a broker (``CELERY_TASK_ALWAYS_EAGER``) the task runs inline.
"""

from __future__ import annotations

from django.urls import reverse

from core.models import Job
from core.tasks import job_task
from pooling.models import QuerySet, Run

from . import services
from .models import Report


@job_task
def build_report_task(
    job: Job,
    name: str,
    query_set_id: int,
    run_ids: list[int],
    settings: dict,
    background_id: int | None = None,
    baseline_id: int | None = None,
) -> str:
    # A redelivery after a crash may find the report committed by the delivery that died.
    report = Report.objects.filter(name=name, created__gte=job.created).first() if job.redelivered else None
    if report is None:
        runs = sorted(Run.objects.filter(pk__in=run_ids), key=lambda r: run_ids.index(r.pk))
        settings = {**settings, "cutoffs": tuple(settings.get("cutoffs", services.DEFAULT_CUTOFFS))}
        report = services.build_report(
            name,
            QuerySet.objects.get(pk=query_set_id),
            runs,
            services.ReportSettings(**settings),
            background=Run.objects.get(pk=background_id) if background_id else None,
            baseline=Run.objects.get(pk=baseline_id) if baseline_id else None,
            job=job,
            bar=False,
        )
    job.result = {"report": report.name, "url": reverse("metrics:report-detail", args=[report.name])}
    job.message = f"Report {report.name} built"
    return report.name

"""Celery tasks of the metrics app: thin shells over services, run as Jobs (:mod:`core.tasks`).

Without a broker (``CELERY_TASK_ALWAYS_EAGER``) the task runs inline.
"""

from __future__ import annotations

from django.urls import reverse

from core.models import Job
from core.tasks import job_task
from pooling.models import QuerySet, Run

from . import services
from .defaults import DEFAULT_CUTOFFS
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
        settings = {**settings, "cutoffs": tuple(settings.get("cutoffs", DEFAULT_CUTOFFS))}
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


@job_task
def label_sensitivity_task(
    job: Job,
    batch_id: int,
    run_ids: list[int],
    settings: dict,
    threshold: float,
    background_id: int | None = None,
) -> int:
    """Pure computation into ``job.result``: a redelivery simply computes it again."""
    from annotation.models import Batch

    from .formatting import sensitivity_result

    runs = sorted(Run.objects.filter(pk__in=run_ids), key=lambda r: run_ids.index(r.pk))
    settings = {**settings, "cutoffs": tuple(settings.get("cutoffs", DEFAULT_CUTOFFS))}
    result = services.label_sensitivity(
        Batch.objects.get(pk=batch_id),
        runs,
        services.ReportSettings(**settings),
        threshold=threshold,
        background=Run.objects.get(pk=background_id) if background_id else None,
        job=job,
        bar=False,
    )
    job.result = sensitivity_result(result) | {"url": reverse("metrics:label-sensitivity") + f"?job={job.pk}"}
    job.message = f"Label sensitivity of {result.batch}: {len(result.table)} values"
    return job.pk

"""Celery tasks of the metrics app: thin shells over services, reporting through a pooling Job.

Without a broker (``CELERY_TASK_ALWAYS_EAGER``) the task runs inline.
"""

from __future__ import annotations

from django.urls import reverse

from config.celery import app
from core.jobs import job_status
from core.models import Job
from pooling.models import QuerySet, Run

from . import services
from .defaults import DEFAULT_CUTOFFS


@app.task
def build_report_task(
    job_id: int,
    name: str,
    query_set_id: int,
    run_ids: list[int],
    settings: dict,
    background_id: int | None = None,
    baseline_id: int | None = None,
) -> str:
    job = Job.objects.get(pk=job_id)
    with job_status(job):
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


@app.task
def label_sensitivity_task(
    job_id: int,
    batch_id: int,
    run_ids: list[int],
    settings: dict,
    threshold: float,
    background_id: int | None = None,
) -> int:
    from annotation.models import Batch

    from .formatting import sensitivity_result

    job = Job.objects.get(pk=job_id)
    with job_status(job):
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


@app.task
def crbo_task(job_id: int, run_id: int, counterfactual_run_id: int, depth: int, p: float) -> None:
    from .swaps import crbo_summary

    job = Job.objects.get(pk=job_id)
    with job_status(job):
        summary = crbo_summary(Run.objects.get(pk=run_id), Run.objects.get(pk=counterfactual_run_id), depth=depth, p=p)
        job.result = {**summary, "url": reverse("metrics:crbo-detail", args=[job.pk])}
        job.message = f"CRBO@{depth} {summary['crbo']:.4f} over {summary['queries']} queries"


@app.task
def preference_task(job_id: int, run_id: int, separator: str, versions: list[str]) -> None:
    from .swaps import preference_summary

    job = Job.objects.get(pk=job_id)
    with job_status(job):
        summary = preference_summary(Run.objects.get(pk=run_id), separator=separator, versions=versions)
        job.result = {**summary, "url": reverse("metrics:preference-detail", args=[job.pk])}
        job.message = f"{summary['cases']} cases, {summary['decided']} decided"


@app.task
def counterfactual_collection_task(
    job_id: int, collection_id: int, name: str, wordlist_id: int | None, her: str
) -> None:
    from pooling.models import Collection, WordList

    from .swaps import write_counterfactual_collection

    job = Job.objects.get(pk=job_id)
    with job_status(job):
        wordlist = WordList.objects.get(pk=wordlist_id) if wordlist_id else None
        collection = write_counterfactual_collection(
            Collection.objects.get(pk=collection_id), name, wordlist=wordlist, her=her, job=job
        )
        job.result = {"collection": collection.name, "passages": collection.passages, "url": reverse("metrics:crbo")}
        job.message = (
            f"Counterfactual collection {collection.name} ({collection.passages} passages) registered: "
            "run the ranker on it, import that run, then measure CRBO"
        )

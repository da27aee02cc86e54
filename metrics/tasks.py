"""Celery tasks of the metrics app: thin shells over services, run as Jobs (:mod:`core.tasks`).

Without a broker the task runs in the process that started it (:mod:`core.local_jobs`).
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
    from annotation import selectors as annotation_selectors

    from .formatting import sensitivity_result

    runs = sorted(Run.objects.filter(pk__in=run_ids), key=lambda r: run_ids.index(r.pk))
    settings = {**settings, "cutoffs": tuple(settings.get("cutoffs", DEFAULT_CUTOFFS))}
    result = services.label_sensitivity(
        annotation_selectors.batches().get(pk=batch_id),
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


@job_task
def crbo_task(job: Job, run_id: int, counterfactual_run_id: int, depth: int, p: float) -> None:
    """CRBO of a run against its counterfactual run (read-only: a redelivery computes it again)."""
    summary = services.crbo_summary(
        Run.objects.get(pk=run_id), Run.objects.get(pk=counterfactual_run_id), depth=depth, p=p
    )
    job.result = {**summary, "url": reverse("metrics:crbo-detail", args=[job.pk])}
    job.message = f"CRBO@{depth} {summary['crbo']:.4f} over {summary['queries']} queries"


@job_task
def preference_task(job: Job, run_id: int, separator: str, versions: list[str]) -> None:
    """Variant preference of a run (read-only: a redelivery computes it again)."""
    summary = services.preference_summary(Run.objects.get(pk=run_id), separator=separator, versions=versions)
    job.result = {**summary, "url": reverse("metrics:preference-detail", args=[job.pk])}
    job.message = f"{summary['cases']} cases, {summary['decided']} decided"


@job_task
def counterfactual_collection_task(job: Job, collection_id: int, name: str, wordlist_id: int | None, her: str) -> None:
    """Write and register a counterfactual collection; a redelivery finds one an earlier delivery registered."""
    from pooling.models import Collection, WordList

    collection = Collection.objects.filter(name=name, created__gte=job.created).first() if job.redelivered else None
    if collection is None:
        wordlist = WordList.objects.get(pk=wordlist_id) if wordlist_id else None
        collection = services.write_counterfactual_collection(
            Collection.objects.get(pk=collection_id), name, wordlist=wordlist, her=her, job=job
        )
    job.result = {"collection": collection.name, "passages": collection.passages, "url": reverse("metrics:crbo")}
    job.message = (
        f"Counterfactual collection {collection.name} ({collection.passages} passages) registered: "
        "run the ranker on it, import that run, then measure CRBO"
    )

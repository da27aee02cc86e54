"""CRBO as a service: a run against the same ranker's run on the counterfactual collection
(Abolghasemi et al., ECIR 2024); the measure itself is pure (:func:`metrics.rbo.crbo`).

No table of its own: a measurement is a :class:`core.models.Job` whose ``result`` holds the
mean and each query's RBO (plain JSON), so the command, the page and the API read one
record. The ``crbo`` command computes inline with :func:`crbo_summary`; the page and the API
start the same computation as a background job (:func:`crbo_job`, :func:`start_crbo`).
"""

from __future__ import annotations

import math

from django.urls import reverse

from core.errors import ServiceError
from core.jobs import background_job
from core.models import Job
from pooling.models import Run

from ..defaults import CRBO_DEPTH, CRBO_P


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def crbo_summary(run: Run, counterfactual_run: Run, *, depth: int = CRBO_DEPTH, p: float = CRBO_P) -> dict:
    """CRBO@depth of ``run`` against ``counterfactual_run``: the mean RBO_ext and each query's.

    Keys: ``run``, ``counterfactual_run``, ``depth``, ``p``, ``crbo`` (None without a common
    query), ``queries`` and ``per_query`` (``[[qid, rbo], ...]`` in the runs' qid order).
    """
    from pooling.services import run_frame

    from ..rbo import crbo

    if run.pk == counterfactual_run.pk:
        raise ServiceError("choose two different runs: the run and its counterfactual run")
    try:
        mean, queries, per_query = crbo(run_frame(run), run_frame(counterfactual_run), p=p, depth=depth)
    except ValueError as exc:
        raise ServiceError(str(exc)) from None
    if not queries:
        raise ServiceError(f"runs {run.name!r} and {counterfactual_run.name!r} have no query in common")
    return {
        "run": run.name,
        "counterfactual_run": counterfactual_run.name,
        "depth": depth,
        "p": p,
        "crbo": _finite(mean),
        "queries": queries,
        "per_query": [[str(qid), float(value)] for qid, value in per_query.items()],
    }


@background_job("metrics.crbo", task="metrics.tasks.crbo_task")
def crbo_job(job: Job, run_id: int, counterfactual_run_id: int, depth: int, p: float) -> None:
    """CRBO of a run against its counterfactual run (read-only: a redelivery computes it again).

    Its Jobs hold the measurements: the CRBO page lists them by ``crbo_job.kind``.
    """
    summary = crbo_summary(Run.objects.get(pk=run_id), Run.objects.get(pk=counterfactual_run_id), depth=depth, p=p)
    job.result = {**summary, "url": reverse("metrics:crbo-detail", args=[job.pk])}
    job.message = f"CRBO@{depth} {summary['crbo']:.4f} over {summary['queries']} queries"


def start_crbo(run: Run, counterfactual_run: Run, *, depth: int = CRBO_DEPTH, p: float = CRBO_P) -> Job:
    """Measure CRBO in the background once the caller's transaction commits; returns its Job."""
    description = f"CRBO of {run.name} against {counterfactual_run.name}"
    return crbo_job.start(description, run.pk, counterfactual_run.pk, depth, p)

"""CRBO as a service: a run against the same ranker's run on the counterfactual collection (Abolghasemi et al.,
ECIR 2024; pure: :func:`genderbias.ranking.rbo.crbo`). No table of its own: a measurement is a Job whose ``result``
holds it, so the command (inline, :func:`crbo_summary`), the page and the API (:func:`start_crbo`) read one record.
"""

from __future__ import annotations

import math

from django.urls import reverse

from core.errors import ServiceError
from core.jobs import background_job
from core.models import Job
from core.options import TIES_OPTION
from genderbias.ranking.defaults import CRBO_DEPTH, CRBO_P, DEFAULT_TIES
from pooling.models import Run
from pooling.selectors import collection_docids
from pooling.services import run_frame


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def counterfactual_warnings(run: Run, counterfactual_run: Run, per_query: dict) -> list[str]:
    """Why ``counterfactual_run`` may not be ``run``'s counterfactual (empty: no doubt found). A counterfactual
    collection keeps the same docids in the same order with other content (:mod:`genderbias.ranking.counterfactual`);
    warned, not refused, so one made elsewhere passes the same check.
    """
    original, swapped = run.collection, counterfactual_run.collection
    warnings = []
    if original.pk == swapped.pk or original.sha256 == swapped.sha256:
        warnings.append(
            f"both runs rank the same collection ({original.name}): a counterfactual run ranks the "
            "counterfactual collection (gendered words swapped), so this CRBO measures no swap"
        )
    elif original.by_reference or swapped.by_reference:
        pass  # a collection by reference lists no docids: nothing to compare without reading it all
    elif original.passages != swapped.passages or not collection_docids(original).equals(collection_docids(swapped)):
        warnings.append(
            f"collection {swapped.name} (of run {counterfactual_run.name}) is not a counterfactual of "
            f"{original.name} (of run {run.name}): a counterfactual collection keeps every docid, in order, "
            "and swaps only the words"
        )
    if per_query and all(value >= 1 - 1e-9 for value in per_query.values()):
        warnings.append(
            f"runs {run.name} and {counterfactual_run.name} rank every common query identically: "
            "CRBO is 1 by construction; check that the second run is the ranker's run on the counterfactual collection"
        )
    return warnings


def crbo_summary(
    run: Run, counterfactual_run: Run, *, depth: int = CRBO_DEPTH, p: float = CRBO_P, ties: str = DEFAULT_TIES
) -> dict:
    """CRBO@depth of ``run`` against ``counterfactual_run``: the mean RBO_ext (None if undefined) and each query's
    (``per_query``, ``[[qid, rbo], ...]``); tie-aware ``ties`` average each query's RBO over the orders of ties.
    """
    from genderbias.ranking.rbo import crbo, tied_queries

    if run.pk == counterfactual_run.pk:
        raise ServiceError("choose two different runs: the run and its counterfactual run")
    try:
        TIES_OPTION.check(ties)
        first, second = run_frame(run), run_frame(counterfactual_run)
        mean, queries, per_query = crbo(first, second, p=p, depth=depth, ties=ties)
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
        "warnings": counterfactual_warnings(run, counterfactual_run, dict(per_query.items())),
        "ties": ties,
        "tied_queries": tied_queries(first, second, depth, set(per_query.index)),
    }


@background_job("metrics.crbo", task="metrics.tasks.crbo_task")
def crbo_job(job: Job, run_id: int, counterfactual_run_id: int, depth: int, p: float, ties: str = "file") -> None:
    """CRBO of a run against its counterfactual run (read-only: a redelivery computes it again)."""
    summary = crbo_summary(
        Run.objects.get(pk=run_id), Run.objects.get(pk=counterfactual_run_id), depth=depth, p=p, ties=ties
    )
    job.result = {**summary, "url": reverse("metrics:crbo-detail", args=[job.pk])}
    job.message = f"CRBO@{depth} {summary['crbo']:.4f} over {summary['queries']} queries"


def start_crbo(
    run: Run, counterfactual_run: Run, *, depth: int = CRBO_DEPTH, p: float = CRBO_P, ties: str = DEFAULT_TIES
) -> Job:
    """Measure CRBO in the background once the caller's transaction commits; returns its Job. Both runs belong to
    one research group, the Job's, so no Job shows one group's run to another group's members."""
    if run.group_id != counterfactual_run.group_id:
        raise ServiceError(
            f"runs {run.name!r} and {counterfactual_run.name!r} belong to different research groups: "
            "CRBO compares runs of one group"
        )
    description = f"CRBO of {run.name} against {counterfactual_run.name}"
    return crbo_job.start(description, run.pk, counterfactual_run.pk, depth, p, ties, of=run)

"""Paired-variant preference as a service (Sundararaman & Subramanian 2022): which of the male, female and neutral
versions of each document a run scores highest (pure: :mod:`genderbias.stats.preference`). Like CRBO
(:mod:`.crbo`), a measurement is a Job whose ``result`` holds the wins.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from django.urls import reverse

from core.errors import ServiceError
from core.jobs import background_job
from core.models import Job
from core.natural import natural_key
from genderbias.datasets import wording_variants
from genderbias.ranking.defaults import VARIANT_VERSIONS
from pooling.models import Run
from pooling.services import run_frame


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _no_versions_message(run: Run, separator: str, versions: Sequence[str]) -> str:
    return (
        f"no docid of run {run.name!r} ends in {separator}<{'|'.join(versions)}>: variant preference needs a run "
        f"over a collection whose documents come in versions (docids like doc{separator}{versions[0]})"
    )


def wordings_of(run: Run) -> dict[str, tuple[str, str, str]] | None:
    """docid -> ``(query, case, wording)`` when ``run`` ranks a named set's documents that come in
    wordings (Grep-BiasIR: :func:`genderbias.datasets.wording_variants`), else None (the versions are
    then read from docid suffixes)."""
    named = run.collection.named_set
    if named is None or "wordings" not in named.has:
        return None
    return wording_variants()


def check_versioned_run(run: Run, *, separator: str = "-", versions: Sequence[str] = VARIANT_VERSIONS) -> None:
    """Refuse (:class:`ServiceError`) a run none of whose docids ends in ``<separator><version>`` (a run over a named
    set's worded documents needs none), before a job that can only fail is started."""
    import polars as pl

    if wordings_of(run) is not None:
        return
    versions = [v.strip() for v in versions if v.strip()]
    suffixes = [f"{separator}{v}" for v in versions]
    docids = run_frame(run).lazy().select("docid").unique()
    hit = docids.filter(pl.any_horizontal(pl.col("docid").cast(pl.String).str.ends_with(s) for s in suffixes))
    if not suffixes or hit.head(1).collect().is_empty():
        raise ServiceError(_no_versions_message(run, separator, versions))


def preference_summary(run: Run, *, separator: str = "-", versions: Sequence[str] = VARIANT_VERSIONS) -> dict:
    """Which version of each document ``run`` scores highest: versions read from docid suffixes
    (``<doc><separator><version>``), or from a named set's own wordings (:func:`wordings_of`). ``wins`` fractions
    are over the decided cases; ``per_query`` has a row per case, its ``winner`` a version, ``tie`` or
    ``incomplete``.
    """
    from genderbias.stats.preference import known_versions, split_versions, variant_cases, variant_preference

    versions = list(dict.fromkeys(v.strip() for v in versions if v.strip()))
    if len(versions) < 2:
        raise ServiceError("give at least two version suffixes (e.g. m,f,n)")
    wordings = wordings_of(run)
    if wordings is not None:
        scores = known_versions(run_frame(run), wordings, versions)
        versions_from = f"the wordings of {run.collection.named_set.key}"
        if not len(scores):
            raise ServiceError(
                f"run {run.name!r} ranks none of its queries' own {run.collection.named_set.key} documents"
            )
    else:
        scores = split_versions(run_frame(run), separator, versions)
        versions_from = "docid suffixes"
        if not len(scores):
            raise ServiceError(_no_versions_message(run, separator, versions))
    result = variant_preference(scores, versions)
    cases = variant_cases(scores, versions)
    return {
        "run": run.name,
        "separator": separator,
        "versions": versions,
        "versions_from": versions_from,
        "cases": result.cases,
        "decided": result.decided,
        "ties": result.ties,
        "incomplete": result.incomplete,
        "wins": {v: {"wins": result.wins[v], "fraction": _finite(result.fraction(v))} for v in versions},
        "per_query": [
            {
                "qid": row["qid"],
                "item": row["item"],
                "winner": row["winner"],
                "ranks": {v: (None if math.isnan(row[f"rank_{v}"]) else int(row[f"rank_{v}"])) for v in versions},
            }
            for row in _natural(cases.to_dict("records"))
        ],
    }


def _natural(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda row: (natural_key(row["qid"]), row["item"]))


@background_job("genderbias.stats.preference", task="metrics.tasks.preference_task")
def preference_job(job: Job, run_id: int, separator: str, versions: list[str]) -> None:
    """Variant preference of a run (read-only: a redelivery computes it again)."""
    summary = preference_summary(Run.objects.get(pk=run_id), separator=separator, versions=versions)
    job.result = {**summary, "url": reverse("metrics:preference-detail", args=[job.pk])}
    job.message = f"{summary['cases']} cases, {summary['decided']} decided"


def start_preference(run: Run, *, separator: str = "-", versions: Sequence[str] = VARIANT_VERSIONS) -> Job:
    """Measure variant preference in the background once the caller's transaction commits."""
    description = f"Variant preference of {run.name}"
    return preference_job.start(description, run.pk, separator, list(versions), of=run)

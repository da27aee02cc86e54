"""Gender-swap measures as services: CRBO (a run against the same ranker's run on the
counterfactual collection) and paired-variant preference (male, female and neutral versions
of each document in one run).

Neither needs tables of its own: a measurement is a :class:`core.models.Job` whose
``result`` holds the summary and the per-query or per-version figures (plain JSON), so the
command, the page and the API read one record. The command computes inline with
:func:`crbo_summary` / :func:`preference_summary`; the page and the API start the same
computation as a Celery task (:func:`start_crbo`, :func:`start_preference`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from core.errors import ServiceError
from core.models import Job
from pooling.models import Collection, Run, WordList

from .defaults import CRBO_DEPTH, CRBO_P, VARIANT_VERSIONS

CRBO_KIND = "metrics.crbo"
PREFERENCE_KIND = "metrics.preference"


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def crbo_summary(run: Run, counterfactual_run: Run, *, depth: int = CRBO_DEPTH, p: float = CRBO_P) -> dict:
    """CRBO@depth of ``run`` against ``counterfactual_run``: the mean RBO_ext and each query's.

    Keys: ``run``, ``counterfactual_run``, ``depth``, ``p``, ``crbo`` (None without a common
    query), ``queries`` and ``per_query`` (``[[qid, rbo], ...]`` in the runs' qid order).
    """
    from pooling.services import run_frame

    from .rbo import crbo

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


def preference_summary(run: Run, *, separator: str = "-", versions: Sequence[str] = VARIANT_VERSIONS) -> dict:
    """Which version of each document ``run`` scores highest (Sundararaman & Subramanian 2022).

    Keys: ``run``, ``separator``, ``versions``, ``cases``, ``decided``, ``ties``,
    ``incomplete`` and ``wins`` (``{version: {"wins": n, "fraction": f}}``, fractions over
    the decided cases).
    """
    from pooling.services import run_frame

    from .preference import split_versions, variant_preference

    versions = list(dict.fromkeys(v.strip() for v in versions if v.strip()))
    if len(versions) < 2:
        raise ServiceError("give at least two version suffixes (e.g. m,f,n)")
    scores = split_versions(run_frame(run), separator, versions)
    if not len(scores):
        raise ServiceError(f"no docid of run {run.name!r} ends in {separator}<{'|'.join(versions)}>")
    result = variant_preference(scores, versions)
    return {
        "run": run.name,
        "separator": separator,
        "versions": versions,
        "cases": result.cases,
        "decided": result.decided,
        "ties": result.ties,
        "incomplete": result.incomplete,
        "wins": {v: {"wins": result.wins[v], "fraction": _finite(result.fraction(v))} for v in versions},
    }


def start_crbo(run: Run, counterfactual_run: Run, *, depth: int = CRBO_DEPTH, p: float = CRBO_P) -> Job:
    """Measure CRBO as a Celery task once the caller's transaction commits; returns its Job."""
    from core.jobs import start_job

    from .tasks import crbo_task

    description = f"CRBO of {run.name} against {counterfactual_run.name}"
    return start_job(crbo_task, CRBO_KIND, description, run.pk, counterfactual_run.pk, depth, p)


def start_preference(run: Run, *, separator: str = "-", versions: Sequence[str] = VARIANT_VERSIONS) -> Job:
    """Measure variant preference as a Celery task once the caller's transaction commits."""
    from core.jobs import start_job

    from .tasks import preference_task

    description = f"Variant preference of {run.name}"
    return start_job(preference_task, PREFERENCE_KIND, description, run.pk, separator, list(versions))


COUNTERFACTUAL_KIND = "metrics.counterfactual"


def write_counterfactual_collection(
    collection: Collection,
    name: str,
    *,
    wordlist: WordList | None = None,
    her: str = "his",
    job: Job | None = None,
) -> Collection:
    """Write the counterfactual of ``collection`` (gendered words and first names swapped) into
    the cache folder and register it as collection ``name``, ready for the ranker's second run.

    The file is written whole before it is registered (:func:`metrics.counterfactual.write_counterfactual`
    renames a finished temporary file), so a failure leaves neither file nor collection.
    """
    from core.names import validate_name
    from core.progress import Progress
    from core.storage import cache_dir
    from pooling.services import import_collection, wordlist_of

    from .counterfactual import Swapper, swap_table, write_counterfactual
    from .services import default_representative_wordlist

    validate_name(name, "collection")
    if Collection.objects.filter(name=name).exists():
        raise ServiceError(f"a collection named {name!r} exists; choose another name")
    words = wordlist_of(wordlist) if wordlist is not None else default_representative_wordlist()
    swapper = Swapper(swap_table(words.words.items(), her=her))
    destination = cache_dir("counterfactual") / f"{name}.tsv.gz"
    source = Path(collection.path)
    with Progress(total=source.stat().st_size, description=f"Swapping {collection.name}", job=job, bar=False) as bar:
        write_counterfactual(source, destination, swapper, progress=bar.update_to)
    return import_collection(destination, name, job=job, bar=False).obj


def start_counterfactual_collection(
    collection: Collection, name: str, *, wordlist: WordList | None = None, her: str = "his"
) -> Job:
    """Write and register the counterfactual collection as a Celery task; returns its Job."""
    from core.jobs import start_job

    from .tasks import counterfactual_collection_task

    description = f"Counterfactual of {collection.name} as {name}"
    wordlist_id = wordlist.pk if wordlist is not None else None
    return start_job(
        counterfactual_collection_task, COUNTERFACTUAL_KIND, description, collection.pk, name, wordlist_id, her
    )

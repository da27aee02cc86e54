"""Pools: the most female- and male-leaning queries of every run, stored with their provenance.

:func:`build_pool` reads and computes (:mod:`genderbias.ranking.pool`) before one transaction stores
the pooled queries as a query set named like the pool, with one entry per (query, run): an
interruption leaves no half-made pool, so the same request can simply run again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from django.db import transaction
from django.urls import reverse

from core.db import insert_rows
from core.errors import ServiceError
from core.jobs import background_job
from core.models import Job
from core.options import TIES_OPTION
from core.services.names import validate_name
from genderbias.files.queryfiles import write_queries
from genderbias.text.tokenize import DEFAULT_TOKENIZER, TOKENIZERS
from genderbias.text.wordlists import GenderWords, default_wordlist, load_wordlist

from ..analysis import check_at_least_one, check_magnitude, check_same_collection, check_tokenizer
from ..models import Pool, PoolEntry, QuerySet, Run, WordList
from ..selectors import reads_by_docid, top_docids, top_rankings, wordlist_of
from .common import collector_paused
from .counts import count_ahead, document_counts_for
from .imports import create_query_set, register_wordlist

if TYPE_CHECKING:
    from genderbias.ranking.pool import PoolResult


@dataclass(frozen=True)
class PoolSettings:
    """How a pool is built: its fields are the :class:`~pooling.models.Pool` fields of the same names."""

    rank_cutoff: int = 10
    depth: int = 500
    magnitude: str = "tf"
    tokenizer: str = DEFAULT_TOKENIZER
    #: How tied documents are ordered for RaB: the reports' declaration, its default and its one check.
    ties: str = TIES_OPTION.default

    def validate(self) -> None:
        check_at_least_one(self.rank_cutoff, "rank cutoff")
        check_at_least_one(self.depth, "pool depth")
        check_magnitude(self.magnitude)
        check_tokenizer(self.tokenizer)
        try:
            TIES_OPTION.check(self.ties)
        except ValueError as exc:
            raise ServiceError(str(exc)) from None


def build_pool(
    name: str,
    query_set: QuerySet,
    runs: Sequence[Run],
    pool_settings: PoolSettings = PoolSettings(),
    wordlist: GenderWords | None = None,
    *,
    job: Job | None = None,
    bar: bool = True,
) -> Pool:
    """Pool the most female- and male-leaning queries (by RaB@cutoff) of every run over ``query_set``."""
    from genderbias.ranking.pool import pool_queries

    _check_pool_request(name, runs, pool_settings)
    words = wordlist or default_wordlist()
    with collector_paused():
        texts = dict(query_set.queries.values_list("qid", "text"))
        rank_bias, ranges = _rank_bias_by_run(query_set, list(texts), runs, pool_settings, words, job=job, bar=bar)
        result = pool_queries(rank_bias, pool_settings.depth)
        return _store_pool(name, query_set, runs, pool_settings, words, texts, rank_bias, result, ranges)


def count_pool_passages(runs: Sequence[Run], *, bar: bool = True, chunks: int | None = None) -> int:
    """Count ahead into the cache what a default pool of ``runs`` reads (built-in words, every
    tokenizer): runs are registered once and pooled many times. Returns the passages counted: none
    for a collection without spans (a gzipped file), which would be read whole again. ``chunks``: a
    collection by reference's texts read over that many Celery workers.
    """
    cutoff = PoolSettings().rank_cutoff
    words = default_wordlist()
    counted = 0
    by_collection: dict[int, list[Run]] = {}
    for run in runs:
        by_collection.setdefault(run.collection_id, []).append(run)
    for group in by_collection.values():
        collection = group[0].collection
        if not reads_by_docid(collection):
            continue
        docids = top_docids(group, cutoff)
        count_ahead(collection, docids, words, TOKENIZERS, bar=bar, chunks=chunks if collection.by_reference else None)
        counted += len(docids)
    return counted


def _check_pool_request(name: str, runs: Sequence[Run], pool_settings: PoolSettings) -> None:
    """Refuse a pool before any reading: bad settings or name, runs over several collections, or a
    name a pool or a query set already has."""
    pool_settings.validate()
    validate_name(name, "pool")
    check_same_collection(runs, "a pool")
    if Pool.objects.filter(name=name).exists() or QuerySet.objects.filter(name=name).exists():
        raise ServiceError(f"a pool or query set named {name!r} already exists; choose another name")


def _rank_bias_by_run(
    query_set: QuerySet,
    qids: list[str],
    runs: Sequence[Run],
    pool_settings: PoolSettings,
    words: GenderWords,
    *,
    job: Job | None,
    bar: bool,
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, tuple[float, float]]]]:
    """RaB@cutoff of each run's queries among ``qids`` as a report computes it (ties ordered by the
    pool's ``ties``): run → qid → RaB, and run → qid → its range over the orders of ties."""
    import polars as pl

    from genderbias.ranking.pool import rank_bias_with_ties

    frames = top_rankings(
        runs,
        pl.Series("qid", qids, dtype=pl.String),
        pool_settings.rank_cutoff,
        repr(query_set.name),
        through_ties=True,
    )
    docids = pl.concat([f["docid"] for f in frames.values()])  # made unique by document_counts_for
    counts = document_counts_for(
        runs[0].collection, docids, words, pool_settings.tokenizer, lengths=False, job=job, bar=bar
    )
    return rank_bias_with_ties(frames, counts, pool_settings.rank_cutoff, pool_settings.magnitude, pool_settings.ties)


def _store_pool(
    name: str,
    query_set: QuerySet,
    runs: Sequence[Run],
    pool_settings: PoolSettings,
    words: GenderWords,
    texts: dict[str, str],
    rank_bias: dict[str, dict[str, float]],
    result: PoolResult,
    ranges: dict[str, dict[str, tuple[float, float]]] | None = None,
) -> Pool:
    """Write the pool in one transaction: its query set, its record, and one entry per (query, run)."""
    from genderbias.ranking.pool import pool_provenance

    provenance = pool_provenance(result, rank_bias)
    with transaction.atomic():
        pooled = create_query_set(
            name,
            [(qid, texts[qid]) for qid in result.qids],
            origin=QuerySet.Origin.POOL,
            source=f"pool of {query_set.name}",
            description=f"Top {pool_settings.depth} of the female- and male-leaning lists of {len(runs)} run(s)",
        )
        pool = Pool.objects.create(
            name=name, source=query_set, queries=pooled, wordlist=register_wordlist(words), **asdict(pool_settings)
        )
        pool.runs.set(runs)
        ranges = ranges or {}
        query_ids = dict(pooled.queries.values_list("qid", "pk"))
        run_ids = {run.name: run.pk for run in runs}
        insert_rows(
            PoolEntry,
            ["pool_id", "query_id", "run_id", "rank_bias", "tie_low", "tie_high", "female_position", "male_position"],
            [
                (
                    pool.pk,
                    query_ids[qid],
                    run_ids[run],
                    value,
                    *ranges.get(run, {}).get(qid, (None, None)),
                    female,
                    male,
                )
                for run, qid, value, female, male in provenance
            ],
        )
    return pool


@background_job("pool", task="pooling.tasks.build_pool_task")
def pool_job(
    job: Job,
    name: str,
    query_set_id: int,
    run_ids: list[int],
    settings: dict,
    wordlist_path: str = "",
    wordlist_id: int | None = None,
) -> str:
    """Build a pool in the background; a redelivery after a crash may find it committed by the delivery that died."""
    pool = Pool.objects.filter(name=name, created__gte=job.created).first() if job.redelivered else None
    if pool is None:
        runs = sorted(Run.objects.filter(pk__in=run_ids), key=lambda r: run_ids.index(r.pk))
        words = load_wordlist(wordlist_path) if wordlist_path else None
        if wordlist_id is not None:
            words = wordlist_of(WordList.objects.get(pk=wordlist_id))
        pool = build_pool(
            name, QuerySet.objects.get(pk=query_set_id), runs, PoolSettings(**settings), words, job=job, bar=False
        )
    job.result = {"pool": pool.name, "url": reverse("pooling:pool-detail", args=[pool.name])}
    job.message = f"Pooled {pool.queries.queries.count()} queries"
    return pool.name


def start_pool(
    name: str,
    query_set: QuerySet,
    runs: Sequence[Run],
    pool_settings: PoolSettings,
    wordlist_path: str = "",
    *,
    wordlist: WordList | None = None,
) -> Job:
    """Build a pool in the background once the caller's transaction commits; returns its Job. The word
    list is a file (``wordlist_path``) or an imported one (``wordlist``); neither: the built-in list."""
    return pool_job.start(
        f"Pool {name}",
        name,
        query_set.pk,
        [run.pk for run in runs],
        asdict(pool_settings),
        wordlist_path,
        wordlist.pk if wordlist is not None else None,
    )


def write_query_file(query_set: QuerySet, path: str | Path) -> int:
    """Write the query set as a query file atomically; returns the number written."""
    return write_queries(query_set.queries.order_by("position").values_list("qid", "text"), path)

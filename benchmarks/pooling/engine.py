"""The benchmark's Django part: this project's import and pool, each step in its own process.

Every function sets Django up on a database of its own in the work folder (``VAR_DIR``)
before it imports a model or a service, so the measuring process pays for nothing it
does not use.
"""

from __future__ import annotations

import time
from pathlib import Path


def _django(work: Path) -> None:
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["VAR_DIR"] = str(work)
    os.environ["DATABASE_URL"] = f"sqlite:///{work / 'db.sqlite3'}"
    import django

    django.setup()


def engine_import(work: Path, collection: Path, queries: Path, runs: list[Path]) -> dict:
    """This project's registration: ``import_collection``, ``import_queries``, ``import_run``."""
    _django(work)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from pooling import services
    from pooling.models import Run

    phases = {}
    start = time.perf_counter()
    collection_obj = services.import_collection(collection, "bench", bar=False).obj
    phases["import_collection"] = time.perf_counter() - start
    t = time.perf_counter()
    services.import_queries(queries, "q")
    known = services.known_docids(collection_obj)  # as `import_run r1 r2 ...` does: prepared once
    imported = [
        services.import_run(path, f"run{i}", collection_obj, order=Run.Order.FILE, known=known).obj
        for i, path in enumerate(runs)
    ]
    services.count_pool_passages(imported, bar=False)  # as `import_run` does after its files
    phases["import_queries_and_runs"] = time.perf_counter() - t
    return phases


def engine_pool(work: Path, cutoff: int, depth: int) -> list[str]:
    """This project's ``pool``, on what ``engine_import`` registered (the counts ``import_run`` made ahead)."""
    _django(work)
    from pooling import services
    from pooling.models import QuerySet, Run

    runs = list(Run.objects.order_by("name"))
    pool = services.build_pool(
        f"p{time.time_ns()}",
        QuerySet.objects.get(name="q"),
        runs,
        services.PoolSettings(cutoff, depth, "tf", "whitespace"),
        bar=False,
    )
    return sorted(pool.queries.queries.values_list("qid", flat=True), key=int)


def engine_first_pool(
    work: Path, collection: Path, queries: Path, runs: list[Path], cutoff: int, depth: int
) -> list[str]:
    """A first pool in one command: ``pool`` given the files, registering them in the same process."""
    _django(work)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from pooling.models import Pool

    call_command(
        "pool",
        name="first",
        queries=str(queries),
        runs=",".join(str(r) for r in runs),
        collection=str(collection),
        rank_cutoff=cutoff,
        depth=depth,
        tokenizer="whitespace",
        verbosity=0,
    )
    return sorted(Pool.objects.get(name="first").queries.queries.values_list("qid", flat=True), key=int)


def engine_pool_phases(work: Path, cutoff: int, depth: int) -> dict[str, dict[str, float]]:
    """Where a ``pool`` command's work goes: the steps of ``services.build_pool`` one by one, in a
    fresh process on what ``engine_import`` registered (with the counts it made ahead), each step's CPU
    seconds (user + system, all threads) and wall seconds, Django's start-up and the heavy
    libraries' imports included; nothing is stored (the last step's transaction is rolled back)."""
    import resource

    def clock() -> tuple[float, float]:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime, time.perf_counter()

    phases: dict[str, dict[str, float]] = {}
    cpu, wall = 0.0, time.perf_counter()  # CPU from the process's start: the interpreter's own too

    def step(name: str) -> None:
        nonlocal cpu, wall
        now_cpu, now_wall = clock()
        phases[name] = {"cpu": now_cpu - cpu, "wall": now_wall - wall}
        cpu, wall = now_cpu, now_wall

    _django(work)
    step("Python and django.setup()")
    import polars as pl

    step("import polars")
    import numpy  # noqa: F401  (what the readers and magnitudes import)

    step("import numpy")
    from django.db import transaction

    from genderbias.ranking.pool import pool_queries, rank_bias_with_ties
    from genderbias.text.wordlists import default_wordlist
    from pooling.models import QuerySet, Run
    from pooling.selectors import top_rankings
    from pooling.services import pools
    from pooling.services.counts import document_counts_for

    step("the pooling modules")
    runs = list(Run.objects.order_by("name"))
    query_set = QuerySet.objects.get(name="q")
    words = default_wordlist()
    texts = dict(query_set.queries.values_list("qid", "text"))
    step("rows and word list read")
    frames = top_rankings(runs, pl.Series("qid", list(texts), dtype=pl.String), cutoff, "q", through_ties=True)
    step("top rankings of the runs")
    docids = pl.concat([f["docid"] for f in frames.values()])
    counts = document_counts_for(runs[0].collection, docids, words, "whitespace", lengths=False, bar=False)
    step("counts read (import_run counted them ahead)")
    settings = pools.PoolSettings(cutoff, depth, "tf", "whitespace")
    rank_bias, ranges = rank_bias_with_ties(frames, counts, cutoff, "tf", settings.ties)
    step("RaB of every query and run")
    result = pool_queries(rank_bias, depth)
    step("lists and their union")
    with transaction.atomic():
        pools._store_pool(f"phases{time.time_ns()}", query_set, runs, settings, words, texts, rank_bias, result, ranges)
        step("pool stored (query set, provenance rows)")
        transaction.set_rollback(True)
    return phases

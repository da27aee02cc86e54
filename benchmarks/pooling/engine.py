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
    for i, path in enumerate(runs):
        services.import_run(path, f"run{i}", collection_obj, order=Run.Order.FILE, known=known)
    phases["import_queries_and_runs"] = time.perf_counter() - t
    return phases


def engine_pool(work: Path, cutoff: int, depth: int) -> list[str]:
    """This project's ``pool``, on what ``engine_import`` registered (cold word-count cache)."""
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

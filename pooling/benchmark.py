"""Benchmark of pooling: this project's engine against the reference notebooks' approach.

Run as ``python manage.py benchmark_pooling``; every measurement runs in a fresh
process (``python -m pooling.benchmark naive|import|pool ...``) so that its peak memory
(``VmHWM``) is its own.

The straightforward approach, as in the SIGIR 2020 notebooks: read the whole collection
into a ``Counter`` per document (``text.lower().split(" ")``), keep dictionaries of
tuples, then loop in Python per run and per query.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections import Counter
from pathlib import Path

from core.benchmark import peak_memory_mb


def naive_pool(
    collection: Path, queries: Path, runs: list[Path], words: dict[str, str], cutoff: int, depth: int
) -> list[str]:
    """The reference notebooks' pooling, kept deliberately plain (file order, whitespace split)."""
    doc_counters: dict[str, Counter] = {}
    with open(collection, encoding="utf-8") as f:
        for line in f:
            pid, _, text = line.rstrip("\n").partition("\t")
            doc_counters[pid] = Counter(text.lower().split(" "))
    female = [w for w, g in words.items() if g == "f"]
    male = [w for w, g in words.items() if g == "m"]
    magnitudes: dict[str, tuple[float, float]] = {}
    for pid, counter in doc_counters.items():
        magnitudes[pid] = (
            math.log(1 + sum(counter[w] for w in female)),
            math.log(1 + sum(counter[w] for w in male)),
        )
    with open(queries, encoding="utf-8") as f:
        qids = {line.split("\t", 1)[0] for line in f}
    pooled: set[str] = set()
    for run in runs:
        ranking: dict[str, list[str]] = {}
        with open(run, encoding="utf-8") as f:
            for line in f:
                qid, _, docid, _rank, _score, _tag = line.split()
                ranking.setdefault(qid, []).append(docid)
        rab = {}
        for qid, docs in ranking.items():
            if qid not in qids:
                continue
            top = docs[:cutoff]
            rab[qid] = sum(magnitudes[d][1] - magnitudes[d][0] for d in top) / len(top)
        # The project's tie rule (pooling.pool): values equal to 12 decimals are ties, by qid.
        female_list = sorted(rab, key=lambda q: (round(rab[q], 12), int(q)))[:depth]
        male_list = sorted(rab, key=lambda q: (-round(rab[q], 12), int(q)))[:depth]
        pooled.update(female_list, male_list)
    return sorted(pooled, key=int)


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
    for i, path in enumerate(runs):
        services.import_run(path, f"run{i}", collection_obj, order=Run.Order.FILE)
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


def _main(argv: list[str]) -> None:
    mode, work, collection, queries, cutoff, depth, *runs = argv
    from pooling.wordlists import default_wordlist

    start = time.perf_counter()
    phases: dict = {}
    qids: list[str] = []
    if mode == "naive":
        qids = naive_pool(
            Path(collection), Path(queries), [Path(r) for r in runs], default_wordlist().words, int(cutoff), int(depth)
        )
    elif mode == "first":
        qids = engine_first_pool(
            Path(work), Path(collection), Path(queries), [Path(r) for r in runs], int(cutoff), int(depth)
        )
    elif mode == "import":
        phases = engine_import(Path(work), Path(collection), Path(queries), [Path(r) for r in runs])
    else:
        qids = engine_pool(Path(work), int(cutoff), int(depth))
    seconds = time.perf_counter() - start
    peak_mb = peak_memory_mb()
    print(json.dumps({"seconds": seconds, "peak_mb": peak_mb, "pooled": len(qids), "qids": qids, "phases": phases}))


if __name__ == "__main__":
    _main(sys.argv[1:])

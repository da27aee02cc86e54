"""Benchmark of pooling: this project's engine against the reference notebooks' approach.

Run as ``python manage.py benchmark_pooling``; every measurement runs in a fresh
process (``python -m pooling.benchmark naive|engine ...``) so that its peak memory
(``ru_maxrss``) is its own.

The straightforward approach, as in the SIGIR 2020 notebooks: read the whole collection
into a ``Counter`` per document (``text.lower().split(" ")``), keep dictionaries of
tuples, then loop in Python per run and per query.
"""

from __future__ import annotations

import json
import math
import resource
import sys
import time
from collections import Counter
from pathlib import Path


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
        female_list = sorted(rab, key=lambda q: (rab[q], int(q)))[:depth]
        male_list = sorted(rab, key=lambda q: (-rab[q], int(q)))[:depth]
        pooled.update(female_list, male_list)
    return sorted(pooled, key=int)


def engine_pool(collection: Path, queries: Path, runs: list[Path], cutoff: int, depth: int) -> tuple[list[str], dict]:
    """This project's path: import collection, queries and runs, then pool (all through services)."""
    import os
    import tempfile

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    work = Path(tempfile.mkdtemp(prefix="bench-"))
    os.environ["VAR_DIR"] = str(work)
    os.environ["DATABASE_URL"] = f"sqlite:///{work / 'db.sqlite3'}"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from pooling import services
    from pooling.models import Run

    phases = {}
    start = time.perf_counter()
    collection_obj = services.import_collection(collection, "bench", bar=False).obj
    phases["import_collection"] = time.perf_counter() - start
    t = time.perf_counter()
    query_set = services.import_queries(queries, "q").obj
    run_objs = [
        services.import_run(path, f"run{i}", collection_obj, order=Run.Order.FILE).obj for i, path in enumerate(runs)
    ]
    phases["import_queries_and_runs"] = time.perf_counter() - t
    t = time.perf_counter()
    pool = services.build_pool(
        "p", query_set, run_objs, services.PoolSettings(cutoff, depth, "tf", "whitespace"), bar=False
    )
    phases["pool"] = time.perf_counter() - t
    qids = sorted(pool.queries.queries.values_list("qid", flat=True), key=int)
    return qids, phases


def _main(argv: list[str]) -> None:
    mode, collection, queries, cutoff, depth, *runs = argv
    from pooling.wordlists import default_wordlist

    start = time.perf_counter()
    phases: dict = {}
    if mode == "naive":
        qids = naive_pool(
            Path(collection), Path(queries), [Path(r) for r in runs], default_wordlist().words, int(cutoff), int(depth)
        )
    else:
        qids, phases = engine_pool(Path(collection), Path(queries), [Path(r) for r in runs], int(cutoff), int(depth))
    seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_mb": peak_mb, "pooled": len(qids), "qids": qids, "phases": phases}))


if __name__ == "__main__":
    _main(sys.argv[1:])

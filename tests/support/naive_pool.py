"""The reference notebooks' pooling: an independent oracle of the pool, and the pooling benchmark's baseline.

The straightforward approach, as in the SIGIR 2020 notebooks: read the whole collection
into a ``Counter`` per document (``text.lower().split(" ")``), keep dictionaries of
tuples, then loop in Python per run and per query. Pure module (no Django): the engine
(:mod:`pooling`, measured by ``manage.py benchmark_pooling`` and ``benchmark_fullsize``
against it) must give the same pool.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from pathlib import Path


def naive_pool(
    collection: Path,
    queries: Path,
    runs: list[Path],
    words: dict[str, str],
    cutoff: int,
    depth: int,
    phases: dict[str, float] | None = None,
) -> list[str]:
    """The reference notebooks' pooling, kept deliberately plain (file order, whitespace split).

    ``phases``, if given, receives the seconds of its two parts: ``collection`` (a counter per
    passage, held) and ``runs`` (every run read and its lists made), which grow with different
    sizes (the full-size benchmark scales each by its own)."""
    start = time.perf_counter()
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
    collection_seconds = time.perf_counter() - start
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
        # The project's tie rule (genderbias.ranking.pool): values equal to 12 decimals are ties, by qid.
        female_list = sorted(rab, key=lambda q: (round(rab[q], 12), int(q)))[:depth]
        male_list = sorted(rab, key=lambda q: (-round(rab[q], 12), int(q)))[:depth]
        pooled.update(female_list, male_list)
    if phases is not None:
        phases.update(collection=collection_seconds, runs=time.perf_counter() - start - collection_seconds)
    return sorted(pooled, key=int)

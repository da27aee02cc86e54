"""One measurement in a fresh process, as ``benchmark_pooling`` starts it; prints one JSON line.

``python -m benchmarks.pooling MODE WORK COLLECTION QUERIES CUTOFF DEPTH RUN...``, MODE ``naive`` (the reference
notebooks' pooling), ``first`` (a first pool in one command), ``import`` (this project's registration), ``pool``
(its pool of what ``import`` registered in WORK) or ``phases`` (where that pool's work goes, storing nothing).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.measure import peak_memory_mb
from benchmarks.pooling import engine
from genderbias.text.wordlists import default_wordlist
from tests.support.naive_pool import naive_pool


def measure(step: Callable[[], tuple[list[str], dict]]) -> dict:
    """Run one benchmark step (returning its pooled qids and its phases' seconds) and what
    the benchmark records of it: seconds, CPU seconds (user + system: the steadier figure on a
    shared machine), this process's peak memory, the pool."""
    start, cpu = time.perf_counter(), time.process_time()
    qids, phases = step()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    peak_mb = peak_memory_mb()
    return {"seconds": seconds, "cpu": cpu, "peak_mb": peak_mb, "pooled": len(qids), "qids": qids, "phases": phases}


def _main(argv: list[str]) -> None:
    mode, work, collection, queries, cutoff, depth, *runs = argv
    run_paths = [Path(r) for r in runs]
    if mode == "naive":

        def step():
            words = default_wordlist().words
            return naive_pool(Path(collection), Path(queries), run_paths, words, int(cutoff), int(depth)), {}
    elif mode == "first":

        def step():
            qids = engine.engine_first_pool(
                Path(work), Path(collection), Path(queries), run_paths, int(cutoff), int(depth)
            )
            return qids, {}
    elif mode == "phases":
        print(json.dumps({"phases": engine.engine_pool_phases(Path(work), int(cutoff), int(depth))}))
        return
    elif mode == "import":

        def step():
            return [], engine.engine_import(Path(work), Path(collection), Path(queries), run_paths)
    else:

        def step():
            return engine.engine_pool(Path(work), int(cutoff), int(depth)), {}

    print(json.dumps(measure(step)))


if __name__ == "__main__":
    _main(sys.argv[1:])

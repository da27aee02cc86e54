"""One measurement in a fresh process, as ``benchmark_pooling`` starts it; prints one JSON line.

``python -m benchmarks.pooling MODE WORK COLLECTION QUERIES CUTOFF DEPTH RUN...``, MODE one of
``naive`` (the reference notebooks' pooling), ``first`` (a first pool in one command),
``import`` (this project's registration) or ``pool`` (this project's pool of what
``import`` registered, in the same WORK folder) or ``phases`` (where that pool's work goes, step by
step, without storing it).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from benchmarks.pooling import engine
from benchmarks.pooling.naive import measure, naive_pool
from genderbias.text.wordlists import default_wordlist


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

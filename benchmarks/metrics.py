"""Benchmark of the metrics: the reference notebooks' loops against the vectorised measures (:mod:`genderbias.ranking.measures`).

Run as ``python manage.py benchmark_metrics``; every mode runs in a fresh process
(``python -m benchmarks.metrics MODE ...``) so that its peak memory (``VmHWM``) is its own.
Data are synthetic and identical across modes (same seed): a collection of ``collection``
documents with gender counts drawn directly (no text), and ``runs`` runs of ``queries``
queries × ``docs`` documents each. Runs are generated one at a time and only the computation
is timed (``seconds``); generation is reported apart (``setup``). The modes: ``benchmark_metrics``'s MODES.
"""

from __future__ import annotations

import functools
import json
import math
import sys
import time

import numpy as np

from benchmarks.measure import peak_memory_mb

CUTOFFS = (5, 10, 20, 30)


def synthetic_counts(collection: int, seed: int) -> dict[str, np.ndarray]:
    """Per document: definitional f/m counts, representative f/m counts, length (mostly no gender word)."""
    rng = np.random.default_rng(seed)
    f = rng.poisson(0.3, collection) * (rng.random(collection) < 0.4)
    m = rng.poisson(0.4, collection) * (rng.random(collection) < 0.4)
    return {
        "f": f,
        "m": m,
        "rf": f + rng.poisson(0.1, collection),
        "rm": m + rng.poisson(0.1, collection),
        "length": rng.integers(20, 90, collection),
    }


def synthetic_run(queries: int, docs: int, collection: int, seed: int, run: int) -> np.ndarray:
    """``[queries × docs]`` document numbers of one run."""
    return np.random.default_rng([seed, run]).integers(0, collection, size=(queries, docs))


def _ranking(queries: int, docs: int, collection: int, seed: int, run: int) -> dict[str, list[str]]:
    """One run as the notebooks held it: ``qid → [docid, ...]`` in rank order."""
    matrix = synthetic_run(queries, docs, collection, seed, run)
    return {str(q): [str(d) for d in row] for q, row in enumerate(matrix.tolist())}


def _magnitudes(collection: int, seed: int) -> dict[str, dict[str, tuple[float, float]]]:
    """Per variant (``tf``: log(1 + count), ``bool``: count > 0), ``docid → (female, male)`` as the notebooks held it."""
    counts = synthetic_counts(collection, seed)
    pairs = list(enumerate(zip(counts["f"].tolist(), counts["m"].tolist(), strict=True)))
    return {
        "tf": {str(d): (math.log(1 + f), math.log(1 + m)) for d, (f, m) in pairs},
        "bool": {str(d): (float(f > 0), float(m > 0)) for d, (f, m) in pairs},
    }


def _timed(runs: int, setup: float, make, compute) -> dict:
    """Per run ``compute(r, make(r))``, only the former timed as ``seconds``; ``setup``: the data's making."""
    seconds = 0.0
    for r in range(runs):
        t0 = time.perf_counter()
        made = make(r)
        t1 = time.perf_counter()
        compute(r, made)
        seconds += time.perf_counter() - t1
        setup += t1 - t0
        del made
    return {"seconds": seconds, "setup": setup}


def naive(queries: int, docs: int, runs: int, collection: int, seed: int) -> dict:
    """A lean pure-Python loop: dictionaries ``docid → (mag_f, mag_m)`` and ``qid → [docids]``, a running sum."""
    start = time.perf_counter()
    magnitudes = _magnitudes(collection, seed)
    setup = time.perf_counter() - start
    results = {}

    def compute(r: int, ranking: dict[str, list[str]]) -> None:
        for variant in ("tf", "bool"):
            mags = magnitudes[variant]
            rab_values = {t: [] for t in CUTOFFS}
            arab_values = {t: [] for t in CUTOFFS}
            for _qid, documents in ranking.items():
                for t in CUTOFFS:
                    top = documents[:t]
                    rab_at = []
                    total = 0.0
                    for i, d in enumerate(top, start=1):
                        total += mags[d][1] - mags[d][0]
                        rab_at.append(total / i)
                    rab_values[t].append(rab_at[-1])
                    arab_values[t].append(sum(rab_at) / len(rab_at))
            for t in CUTOFFS:
                results[f"{r}|RaB|{variant}|{t}"] = sum(rab_values[t]) / len(rab_values[t])
                results[f"{r}|ARaB|{variant}|{t}"] = sum(arab_values[t]) / len(arab_values[t])

    timed = _timed(runs, setup, lambda r: _ranking(queries, docs, collection, seed, r), compute)
    return timed | {"results": results}


def notebook(queries: int, docs: int, runs: int, collection: int, seed: int) -> dict:
    """The SIGIR 2020 notebook's algorithm as published (our own code, same steps).

    Per query a list of per-document tuples (bias, female, male); RaB@t takes ``np.mean``
    of each component over the list's first t entries; ARaB@t calls RaB@1 … RaB@min(t, n)
    and averages them -- so ARaB@30 recomputes 30 prefix means per query. (The notebook's
    bias component is female − male; we store male − female, the sign this project uses.)
    """
    start = time.perf_counter()
    per_document = {
        variant: {d: (m - f, f, m) for d, (f, m) in magnitudes.items()}
        for variant, magnitudes in _magnitudes(collection, seed).items()
    }
    setup = time.perf_counter() - start

    def rank_bias_at(bias_list: list, at_rank: int) -> tuple[float, float, float]:
        top = bias_list[:at_rank]
        return (
            float(np.mean([x[0] for x in top])),
            float(np.mean([x[1] for x in top])),
            float(np.mean([x[2] for x in top])),
        )

    def average_rank_bias_at(bias_list: list, at_rank: int) -> float:
        values = [rank_bias_at(bias_list, t + 1)[0] for t in range(at_rank) if len(bias_list) >= t + 1]
        return float(np.mean(values))

    results = {}

    def compute(r: int, ranking: dict[str, list[str]]) -> None:
        for variant in ("tf", "bool"):
            lists = {qid: [per_document[variant][d] for d in documents] for qid, documents in ranking.items()}
            for t in CUTOFFS:
                rab = [rank_bias_at(bias_list, t)[0] for bias_list in lists.values()]
                arab = [average_rank_bias_at(bias_list, t) for bias_list in lists.values()]
                results[f"{r}|RaB|{variant}|{t}"] = float(np.mean(rab))
                results[f"{r}|ARaB|{variant}|{t}"] = float(np.mean(arab))

    timed = _timed(runs, setup, lambda r: _ranking(queries, docs, collection, seed, r), compute)
    return timed | {"results": results}


def _frames(queries: int, docs: int, collection: int, seed: int, run: int):
    import polars as pl

    matrix = synthetic_run(queries, docs, collection, seed, run)
    frame = pl.DataFrame(
        {
            "qid": pl.Series(np.repeat(np.arange(queries), docs)).cast(pl.String),
            "docid": pl.Series(matrix.ravel()).cast(pl.String),
            "rank": np.tile(np.arange(1, docs + 1, dtype=np.int32), queries),
        }
    )
    return frame


def _count_frames(counts: dict, collection: int):
    import polars as pl

    docid = pl.Series(np.arange(collection)).cast(pl.String)
    definitional = pl.DataFrame({"docid": docid, "f": counts["f"], "m": counts["m"], "length": counts["length"]})
    representative = pl.DataFrame({"docid": docid, "f": counts["rf"], "m": counts["rm"], "length": counts["length"]})
    return definitional, representative


def vector(queries: int, docs: int, runs: int, collection: int, seed: int, full: bool = False) -> dict:
    """RaB/ARaB (TF and Boolean) through :mod:`genderbias.ranking.measures`; ``full``: every metric through
    :func:`~genderbias.ranking.measures.evaluate_run` and the means' bootstrap CIs (``significance.summarise``)."""
    import pandas as pd

    from genderbias.ranking import measures
    from genderbias.stats import significance

    counts = synthetic_counts(collection, seed)
    t0 = time.perf_counter()
    definitional, representative = _count_frames(counts, collection)
    setup = time.perf_counter() - t0
    results = {}
    parts = []

    def compute(r: int, frame) -> None:
        if full:
            values = measures.evaluate_run(frame, definitional, representative, CUTOFFS)
            values.insert(0, "run", str(r))
            parts.append(values)
            return
        for variant in ("tf", "bool"):
            table = measures.rank_bias(frame, definitional, CUTOFFS, variant)
            for t in CUTOFFS:
                results[f"{r}|RaB|{variant}|{t}"] = float(table[f"RaB@{t}"].mean())
                results[f"{r}|ARaB|{variant}|{t}"] = float(table[f"ARaB@{t}"].mean())

    timed = _timed(runs, setup, lambda r: _frames(queries, docs, collection, seed, r), compute)
    if full:
        t0 = time.perf_counter()
        summary = significance.summarise(pd.concat(parts, ignore_index=True))
        timed["seconds"] += time.perf_counter() - t0
        for row in summary.itertuples(index=False):
            results[f"{row.run}|{row.metric}|{row.variant}|{row.cutoff}"] = row.value
    return timed | {"results": results}


def main(argv: list[str]) -> None:
    mode, queries, docs, runs, collection, seed = argv[0], *map(int, argv[1:6])
    modes = {"naive": naive, "notebook": notebook, "vector": vector, "full": functools.partial(vector, full=True)}
    if mode not in modes:
        raise SystemExit(f"unknown mode {mode!r}")
    out = modes[mode](queries, docs, runs, collection, seed)
    out["peak_mb"] = peak_memory_mb()
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])

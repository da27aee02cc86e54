"""Benchmark: the collection scan and the run import split over real Celery workers, 1 vs 2 (and more).

Starts its own ``redis-server`` (loopback, no persistence) and ``celery worker`` processes (concurrency 1 each)
sharing a SQLite database in the work folder; the measuring process is a subprocess, to see the broker settings.
Every worker count must give the in-process reference's result. Imports no Django at module level.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks.measure import run_module, tree_peak_memory_mb

#: What is split over the workers, and the in-process reference each is compared with.
WHAT = {
    "scan": "one pass, in process",
    "run-import": "import_run, in process",
    "v2-texts": "texts by id, in process",  # a v2 collection by reference: the first 300,000 passages' texts
}
#: What each compares with its reference.
SAME = {"scan": "counts", "run-import": "run", "v2-texts": "texts"}
#: ``v2-texts``: the texts read, the first of each of the 70 bundles (as ``benchmark_v2``'s runs rank).
V2_TEXTS_READ = 300_000
#: The run imported by ``run-import``: 7,000 queries x 1,000 documents (7M lines, ~240 MB).
RUN_SPEC = {"queries": 7_000, "runs": 1, "depth": 1_000}
CELERY = [sys.executable, "-m", "celery", "-A", "config"]


def run_scan_benchmark(
    work: Path, passages: int, workers: list[int], redis_port: int, what: str = "scan", run: Path | None = None
) -> Iterator[str]:
    """Yields the progress and the table; ``run`` is the run file ``run-import`` imports (default:
    a 7,000 x 1,000 synthetic run written in ``work``)."""
    from pooling.synthetic import SyntheticSpec, write_collection, write_queries, write_runs

    if what not in WHAT:
        raise ValueError(f"what must be one of {', '.join(WHAT)}")
    work = work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    collection = work / f"collection-{passages}.tsv"
    if what == "v2-texts":
        from benchmarks.v2_layout import write_collection as write_v2

        for item in write_v2(work, passages):
            if isinstance(item, Path):
                collection = item
            else:
                yield item
    elif not collection.exists():
        yield f"Writing {passages:,} synthetic passages to {collection} …"
        write_collection(collection, SyntheticSpec(passages=passages))
    target = collection
    if what == "run-import" and run is not None:
        target = run.resolve()
    elif what == "run-import":
        runs = work / f"runs-{passages}"
        target = runs / "run1.trec"
        if not target.exists():
            spec = SyntheticSpec(passages=passages, **RUN_SPEC)
            yield f"Writing a run of {spec.queries:,} queries x {spec.depth:,} documents to {target} …"
            runs.mkdir(exist_ok=True)
            write_runs(runs, write_queries(runs / "queries.tsv", spec), spec)
    broker = f"redis://127.0.0.1:{redis_port}/0"
    redis = subprocess.Popen(
        ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.5)
        env = dict(
            os.environ,
            DJANGO_SETTINGS_MODULE="config.settings",
            VAR_DIR=str(work),
            DATABASE_URL=f"sqlite:///{work / 'db.sqlite3'}",
            CELERY_BROKER_URL=broker,
        )
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], env=env, check=True)
        results = {}
        for n in [0, *workers]:  # 0: one in-process pass, the reference counts
            procs = [
                subprocess.Popen(
                    [*CELERY, "worker", "-c", "1", "-n", f"scan{i}@%h", "-l", "WARNING"],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                for i in range(n)
            ]
            try:
                _wait_until_ready(env, n)
                result = run_module("benchmarks.scan", what, work, collection, target, n, env=env)
                memory = [tree_peak_memory_mb(proc.pid) for proc in procs]
            finally:
                for proc in procs:
                    proc.terminate()
                for proc in procs:
                    proc.wait(timeout=60)
            results[n] = result | {"worker_mb": memory}
        single = results[0]
        yield (
            f"{'approach':<28}{'seconds':>9}{'speed-up':>10}  same {SAME[what]}"
            "  peak MB (measuring process; each worker)"
        )
        yield f"{WHAT[what]:<28}{single['seconds']:>9.1f}{1:>9.2f}x  (reference)  {single['peak_mb']:,.0f}"
        for n in workers:
            r = results[n]
            same = "yes" if r["digest"] == single["digest"] else "NO"
            label = f"{n} worker(s), {r['chunks']} chunk(s)"
            workers_mb = ", ".join(f"{mb:,.0f}" for mb in r["worker_mb"])
            yield (
                f"{label:<28}{r['seconds']:>9.1f}{single['seconds'] / r['seconds']:>9.2f}x  {same:<12}"
                f"{r['peak_mb']:,.0f}; {workers_mb}"
            )
    finally:
        redis.terminate()
        redis.wait(timeout=30)


def _wait_until_ready(env: dict, workers: int, timeout: float = 120.0) -> None:
    """Block until ``workers`` workers answer a ping, so start-up is not timed."""
    deadline = time.monotonic() + timeout
    while workers and time.monotonic() < deadline:
        replies = subprocess.run(
            [*CELERY, "inspect", "ping", "--timeout", "1", "--json"],
            env=env,
            capture_output=True,
            text=True,
        ).stdout
        if replies.count("pong") >= workers:
            return
    if workers:
        raise RuntimeError(f"{workers} Celery worker(s) did not start within {timeout:.0f} s")


def _measure(what: str, work: Path, collection_path: Path, target: Path, workers: int) -> dict:
    """In the subprocess: import the collection once, then count every passage (``scan``)
    or import the run at ``target`` (``run-import``); cold, every chunk read again."""
    import hashlib

    from benchmarks.measure import peak_memory_mb, setup_django

    setup_django()
    from genderbias.files.blocks import byte_ranges
    from genderbias.text import magnitudes as mag
    from genderbias.text.wordlists import default_wordlist
    from pooling import services
    from pooling.models import Run, ScanChunk

    if what == "v2-texts":
        import shutil

        from genderbias.files.docstores import checksum_of_texts
        from pooling.synthetic import v2_docids

        collection = services.register_collection_by_reference(collection_path, "v2-bench", kind="msmarco-v2").obj
        docids = v2_docids(collection_path, V2_TEXTS_READ // 70, 70)
        shutil.rmtree(services.counts._texts_folder(collection), ignore_errors=True)  # cold: every text read
        start = time.perf_counter()
        texts = services.texts_by_reference(collection, docids, chunks=workers or None)
        seconds = time.perf_counter() - start
        return {
            "seconds": seconds,
            "chunks": workers or 1,
            "digest": checksum_of_texts(texts),
            "rows": len(texts),
            "peak_mb": peak_memory_mb(),
        }
    collection = services.import_collection(collection_path, "scan-bench", bar=False).obj
    ScanChunk.objects.all().delete()
    Run.objects.filter(name=f"bench{workers}").delete()
    start = time.perf_counter()
    if what == "scan":
        words = default_wordlist()
        if workers == 0:
            result = mag.document_counts(collection_path, None, words, "whitespace")
        else:
            result = services.document_counts_chunked(collection, None, words, "whitespace", chunks=workers)
        seconds = time.perf_counter() - start
    else:
        run = services.import_run(target, f"bench{workers}", collection, chunks=workers or None).obj
        seconds = time.perf_counter() - start
        result = services.run_frame(run)  # read after the clock stops: for the comparison only
    if not workers:
        chunks = 1
    elif what == "scan":
        chunks = ScanChunk.objects.count()
    else:  # a run import removes its chunks once read
        chunks = len(byte_ranges(target, workers))
    digest = hashlib.sha256(result.sort(result.columns).write_csv().encode()).hexdigest()
    return {"seconds": seconds, "chunks": chunks, "digest": digest, "rows": len(result), "peak_mb": peak_memory_mb()}


if __name__ == "__main__":
    what_arg, work_arg, collection_arg, target_arg, workers_arg = sys.argv[1:]
    print(json.dumps(_measure(what_arg, Path(work_arg), Path(collection_arg), Path(target_arg), int(workers_arg))))

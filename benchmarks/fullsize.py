"""Benchmark: the design card's study at its full size, registered and pooled as a user types it.

Synthetic data of MS MARCO passage ranking's real sizes (8,841,823 passages, the 6,980 dev queries, 14 runs
1,000 deep) is registered and pooled as the README tells a user to, each command a fresh ``manage.py`` process
on a new SQLite database (or an empty PostgreSQL database given by URL): per step its wall and CPU time, peak
memory and the disk the site's data hold after it. The reference notebooks' approach (``tests.support.naive_pool``)
holds a ``Counter`` per passage, too much for the whole collection: it runs on a prefix, each of its two phases
scaled by its own size to the full study, and the scaled figure is printed as such (docs/benchmarks.md, "The
study at its full size").

Pure orchestration (no Django at module level): the measured commands run as subprocesses.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from benchmarks.measure import ROOT, run_module

#: MS MARCO passage ranking (v1): collection.tsv's passages, the dev set's queries, and the
#: design card's 14 rankers, each ranking the top 1,000 passages per query.
MSMARCO = {"passages": 8_841_823, "queries": 6_980, "runs": 14, "depth": 1_000}


@dataclass(frozen=True)
class Step:
    name: str
    seconds: float
    cpu_seconds: float
    peak_mb: float
    disk_mb: float


def write_runs_fast(
    directory: Path, queries_path: Path, passages: int, runs: int, depth: int, seed: int = 13
) -> list[Path]:
    """TREC runs of ``depth`` distinct random passages per query, written in blocks of queries with polars
    (:func:`pooling.synthetic.write_runs` writes a line at a time: too slow at this size)."""
    import numpy as np

    qids = np.array([line.split("\t", 1)[0] for line in queries_path.read_text(encoding="utf-8").splitlines()])
    paths = []
    block = 500
    for r in range(runs):
        rng = np.random.default_rng(seed + 100 + r)
        paths.append(directory / f"run{r + 1}.trec")
        with open(paths[-1], "wb") as out:
            for start in range(0, len(qids), block):
                chunk = qids[start : start + block]
                docs = rng.integers(0, passages, size=(len(chunk), depth))
                ordered = np.sort(docs, axis=1)
                for row in np.flatnonzero((np.diff(ordered, axis=1) == 0).any(axis=1)):
                    docs[row] = rng.choice(passages, size=depth, replace=False)
                write_trec(out, chunk, docs.ravel(), depth, rng, f"run{r + 1}")
    return paths


def write_trec(out, qids, docids, depth: int, rng, tag: str) -> None:
    """Rankings of ``depth`` documents (``docids``, query by query) as TREC lines, scores falling from 30."""
    import numpy as np
    import polars as pl

    scores = -np.sort(-rng.random((len(qids), depth)), axis=1) * 30
    frame = pl.DataFrame(
        {
            "qid": np.repeat(qids, depth),
            "q0": "Q0",
            "docid": docids,
            "rank": np.tile(np.arange(1, depth + 1), len(qids)),
            "score": scores.ravel(),
            "tag": tag,
        }
    )
    frame.write_csv(out, separator=" ", include_header=False, float_precision=4)


def new_site(work: Path, database_url: str | None = None) -> tuple[Path, dict]:
    """A new site in ``work/site`` and the environment of its commands: as in production (bin/_bench.sh), debug
    off and the keys it then requires made for this run; its database a new SQLite file or ``database_url``."""
    import secrets
    import shutil

    site = work / "site"
    shutil.rmtree(site, ignore_errors=True)
    site.mkdir(parents=True)
    database = database_url or f"sqlite:///{site / 'db.sqlite3'}"
    env = dict(os.environ, VAR_DIR=str(site / "var"), DATABASE_URL=database, DJANGO_DEBUG="0")
    env.setdefault("DJANGO_SECRET_KEY", secrets.token_urlsafe(50))
    env.setdefault("WORKER_PSEUDONYM_KEY", secrets.token_urlsafe(50))
    return site, env


def timed_steps(steps: list[tuple[str, list[str]]], env: dict, disk=lambda: 0.0) -> Iterator[str | Step]:
    """Each ``(name, manage.py arguments)`` a fresh process: a progress line before it, its :class:`Step` after."""
    for name, arguments in steps:
        yield f"  {name} …"
        seconds, cpu, peak = run_command(arguments, env, ROOT)
        yield Step(name, seconds, cpu, peak, disk())


def write_data(work: Path, sizes: dict) -> Iterator[str | dict]:
    """Write (or reuse) the collection, queries and runs in ``work``; yields progress lines, then
    a dict of the files. ``collection-<passages>.tsv`` is the name :mod:`benchmarks.scan` reuses."""
    from pooling.synthetic import SyntheticSpec, write_collection, write_queries

    spec = SyntheticSpec(passages=sizes["passages"], queries=sizes["queries"])
    collection = work / f"collection-{sizes['passages']}.tsv"
    queries = work / f"queries-{sizes['queries']}.tsv"
    runs_dir = work / f"runs-{sizes['passages']}-{sizes['queries']}x{sizes['depth']}"
    if not collection.exists():
        yield f"Writing {sizes['passages']:,} synthetic passages to {collection} …"
        start = time.perf_counter()
        write_collection(collection.with_suffix(".part"), spec)
        collection.with_suffix(".part").rename(collection)
        yield f"  done in {time.perf_counter() - start:.0f} s ({collection.stat().st_size / 2**30:.2f} GiB)"
    if not queries.exists():
        write_queries(queries, spec)
    runs = sorted(runs_dir.glob("run*.trec"), key=lambda p: int(p.stem[3:]))
    if len(runs) < sizes["runs"]:
        yield f"Writing {sizes['runs']} runs of {sizes['queries']:,} queries x {sizes['depth']:,} to {runs_dir} …"
        start = time.perf_counter()
        parts = runs_dir.with_suffix(".part")
        parts.mkdir(parents=True, exist_ok=True)
        runs = write_runs_fast(parts, queries, sizes["passages"], sizes["runs"], sizes["depth"])
        parts.rename(runs_dir)
        runs = sorted(runs_dir.glob("run*.trec"), key=lambda p: int(p.stem[3:]))
        size = sum(p.stat().st_size for p in runs)
        yield f"  done in {time.perf_counter() - start:.0f} s ({size / 2**30:.2f} GiB)"
    yield {"collection": collection, "queries": queries, "runs": runs[: sizes["runs"]]}


def run_command(arguments: list[str], env: dict, cwd: Path) -> tuple[float, float, float]:
    """Run ``python manage.py ARGUMENTS`` as a user does, a fresh process: its wall seconds, CPU seconds (user +
    system, its own and its children's, from ``wait4``: on a shared machine the steadier figure) and peak memory
    in MB (``ru_maxrss``: the process that did the work, not a client of it). Its stderr goes to a file, which
    no amount of output fills."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        process = subprocess.Popen(
            [sys.executable, "manage.py", *arguments], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err
        )
        _pid, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            err.seek(0)
            raise RuntimeError(f"manage.py {' '.join(arguments)} failed:\n{err.read().decode()[-2000:]}")
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def register_and_pool(
    work: Path, files: dict, cutoff: int = 10, depth: int = 500, database_url: str | None = None
) -> Iterator[str | Step]:
    """Every command a user types, in order, on a new SQLite database in ``work/site`` (or on the empty
    PostgreSQL ``database_url``): yields a progress line before each step and its :class:`Step` after it."""
    if database_url:
        check_empty(database_url)
    site, env = new_site(work, database_url)
    names = [p.stem for p in files["runs"]]
    steps: list[tuple[str, list[str]]] = [
        ("migrate", ["migrate", "-v", "0"]),
        ("import_collection", ["import_collection", str(files["collection"]), "--name", "msmarco", "-v", "0"]),
        ("import_queries", ["import_queries", str(files["queries"]), "--name", "dev", "-v", "0"]),
    ]
    # As the README types it: one import_run given every run file (named after their files).
    steps.append(
        (
            f"import_run ({len(names)} runs)",
            ["import_run", *map(str, files["runs"]), "--collection", "msmarco", "--order", "file", "-v", "0"],
        )
    )
    steps.append(
        (
            "pool",
            [
                *("pool", "--name", "pool", "--queries", "dev", "--runs", ",".join(names)),
                *("--rank-cutoff", str(cutoff), "--depth", str(depth), "--tokenizer", "whitespace"),
                *("--out", str(work / "pooled.tsv"), "-v", "0"),
            ],
        )
    )

    def disk_mb() -> float:  # what the site's files and its database hold on disk
        held = sum(f.stat().st_size for f in site.rglob("*") if f.is_file())
        return (
            held + (_one(database_url, "SELECT pg_database_size(current_database())") if database_url else 0)
        ) / 2**20

    yield from timed_steps(steps, env, disk_mb)


def check_empty(database_url: str) -> None:
    """Refuse a PostgreSQL database that has tables: the benchmark measures a new site's first commands."""
    tables = _one(database_url, "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()")
    if tables:
        raise ValueError(f"{database_url}: the database has {tables} table(s); give a new, empty one (createdb)")


def _one(database_url: str, sql: str):
    """The one value ``sql`` selects in the PostgreSQL database."""
    import psycopg

    with psycopg.connect(database_url) as connection:
        return connection.execute(sql).fetchone()[0]


def reference_on_prefix(work: Path, files: dict, passages: int, cutoff: int = 10, depth: int = 500) -> dict:
    """The reference notebooks' pooling on the first ``passages`` passages and the run lines that
    rank them, in a fresh process; its phases' seconds, its peak memory and the sizes to scale by."""
    prefix = work / f"reference-{passages}"
    prefix.mkdir(exist_ok=True)
    collection = _written_once(prefix / "collection.tsv", files["collection"], lambda s: itertools.islice(s, passages))
    runs = [
        _written_once(
            prefix / path.name, path, lambda s: (line for line in s if int(line.split(b" ", 3)[2]) < passages)
        )
        for path in files["runs"]
    ]
    lines = sum(target.read_bytes().count(b"\n") for target in runs)
    arguments = [collection, files["queries"], cutoff, depth, *runs]
    result = run_module("benchmarks.fullsize", "reference", *arguments)
    result.update(passages=passages, run_lines=lines)
    return result


def _written_once(target: Path, source: Path, kept) -> Path:
    """``target``: the lines ``kept(lines)`` keeps of ``source`` (written once, through a ``.part`` file)."""
    if not target.exists():
        with open(source, "rb") as lines, open(target.with_suffix(".part"), "wb") as out:
            out.writelines(kept(lines))
        target.with_suffix(".part").rename(target)
    return target


def scale_reference(measured: dict, passages: int, run_lines: int) -> dict:
    """The reference's time and memory at the full size, linear as its loops are: the collection phase and the
    memory (the held counters are nearly all of it) scale with the passages, the runs phase with the run lines."""
    by_passages = passages / measured["passages"]
    by_lines = run_lines / max(measured["run_lines"], 1)
    phases = measured["phases"]
    return {
        "seconds": phases["collection"] * by_passages + phases["runs"] * by_lines,
        "peak_mb": measured["peak_mb"] * by_passages,
    }


def table(steps: list[Step], reference: dict, scaled: dict, sizes: dict, run_lines: int) -> list[str]:
    """The figures as a Markdown table, one row per step, then registration + pool beside the
    reference's scaled time."""
    rows = [
        "| step | seconds | CPU s | peak MB | disk after, MB |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for step in steps:
        rows.append(
            f"| `{step.name}` | {step.seconds:,.1f} | {step.cpu_seconds:,.1f} | {step.peak_mb:,.0f} | {step.disk_mb:,.0f} |"
        )
    runs = [s for s in steps if s.name.startswith("import_run")]
    total = sum(s.seconds for s in steps)
    peak = max(s.peak_mb for s in steps)
    rows.append(
        f"| **all {len(steps)} commands** (runs: {sum(s.seconds for s in runs):,.1f} s) | **{total:,.1f}** | "
        f"{sum(s.cpu_seconds for s in steps):,.1f} | **{peak:,.0f}** | {steps[-1].disk_mb:,.0f} |"
    )
    rows += [
        "",
        f"Study: {sizes['passages']:,} passages, {sizes['queries']:,} queries, {sizes['runs']} runs x "
        f"{sizes['depth']:,} ({run_lines:,} run lines).",
        f"Reference (the notebooks' approach) measured on {reference['passages']:,} passages and the "
        f"{reference['run_lines']:,} run lines that rank them: collection {reference['phases']['collection']:.1f} s, "
        f"runs {reference['phases']['runs']:.1f} s, peak {reference['peak_mb']:,.0f} MB; scaled to the full study: "
        f"{scaled['seconds']:,.0f} s and {scaled['peak_mb']:,.0f} MB.",
        f"Registration + pool, as typed: {total:,.1f} s, peak {peak:,.0f} MB: "
        f"{scaled['seconds'] / total:.1f}x the reference's scaled time; pool alone "
        f"{scaled['seconds'] / steps[-1].seconds:.1f}x.",
    ]
    return rows


def _reference_main(argv: list[str]) -> None:
    """In the subprocess: the reference's pooling with its two phases timed."""
    from benchmarks.measure import peak_memory_mb
    from genderbias.text.wordlists import default_wordlist
    from tests.support.naive_pool import naive_pool

    collection, queries, cutoff, depth, *runs = argv
    phases: dict[str, float] = {}
    start = time.perf_counter()
    qids = naive_pool(
        Path(collection),
        Path(queries),
        [Path(r) for r in runs],
        default_wordlist().words,
        int(cutoff),
        int(depth),
        phases,
    )
    print(
        json.dumps(
            {"seconds": time.perf_counter() - start, "phases": phases, "peak_mb": peak_memory_mb(), "pooled": len(qids)}
        )
    )


if __name__ == "__main__":
    if sys.argv[1] == "reference":
        _reference_main(sys.argv[2:])

"""Benchmark: MS MARCO v2 passage by reference, whose cost must follow the runs, not the collection.

A synthetic collection in v2's own layout (:func:`pooling.synthetic.write_v2_bundles`) at several sizes, each a
prefix of the next in every bundle, and one set of runs ranking passages of the first ``retrieved_from``
passages, so the same runs, ids and texts hold in every size. For each size the commands a user types run as
:mod:`benchmarks.fullsize` runs them; the ratio of the totals between sizes is the figure: it should stay near 1
as the collection grows tenfold (docs/benchmarks.md, "MS MARCO v2 by reference").

Pure orchestration (no Django at module level): the measured commands run as subprocesses.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

from benchmarks.fullsize import Step, new_site, timed_steps, write_trec

#: TREC DL on MS MARCO v2: 14 rankers, 4,000 queries, 100 passages each; 70 bundle files.
V2 = {"runs": 14, "queries": 4_000, "depth": 100, "bundles": 70, "report_runs": 7}


def write_collection(work: Path, passages: int) -> Iterator[str | Path]:
    """The v2-layout collection of ``passages`` in ``work`` (reused when there); progress lines, then its folder."""
    from pooling.synthetic import write_v2_bundles

    folder = work / f"v2-{passages}"
    if not (folder / "msmarco_passage_69").exists():
        yield f"Writing {passages:,} passages in v2's layout to {folder} …"
        start = time.perf_counter()
        part = folder.with_suffix(".part")
        shutil.rmtree(part, ignore_errors=True)
        write_v2_bundles(part, passages, bundles=V2["bundles"])
        part.rename(folder)
        size = sum(p.stat().st_size for p in folder.iterdir())
        yield f"  done in {time.perf_counter() - start:.0f} s ({size / 2**30:.2f} GiB)"
    yield folder


def write_runs(work: Path, folder: Path, retrieved_from: int, seed: int = 13) -> Iterator[str | dict]:
    """Queries and runs ranking passages among the first ``retrieved_from`` of ``folder`` (the first
    ``retrieved_from / 70`` of each bundle: the same ids in every larger collection); progress lines,
    then ``{"queries", "runs"}``."""
    import numpy as np

    from pooling.synthetic import SyntheticSpec, v2_docids, write_queries

    target = work / f"runs-v2-{retrieved_from}-{V2['queries']}x{V2['depth']}"
    queries = work / f"queries-v2-{V2['queries']}.tsv"
    if not queries.exists():
        write_queries(queries, SyntheticSpec(queries=V2["queries"]))
    if not target.exists():
        yield f"Writing {V2['runs']} runs of {V2['queries']:,} queries x {V2['depth']} to {target} …"
        start = time.perf_counter()
        ids = np.array(v2_docids(folder, retrieved_from // V2["bundles"], V2["bundles"]), dtype=object)
        qids = np.array([line.split("\t", 1)[0] for line in queries.read_text().splitlines()])
        part = target.with_suffix(".part")
        shutil.rmtree(part, ignore_errors=True)
        part.mkdir(parents=True)
        depth = V2["depth"]
        for r in range(V2["runs"]):
            rng = np.random.default_rng(seed + 100 + r)
            picks = np.stack([rng.choice(len(ids), depth, replace=False) for _ in qids])
            with open(part / f"run{r + 1}.trec", "wb") as out:
                write_trec(out, qids, ids[picks.ravel()].astype(str), depth, rng, f"run{r + 1}")
        part.rename(target)
        yield f"  done in {time.perf_counter() - start:.0f} s"
    runs = sorted(target.glob("run*.trec"), key=lambda p: int(p.stem[3:]))
    yield {"queries": queries, "runs": runs}


def write_flat_collection(work: Path, folder: Path) -> Path:
    """The passages of ``folder``'s bundles as a ``pid<TAB>passage`` file (reused when there): the same
    passages for the full-scan import the by-reference figures are checked against."""
    import polars as pl

    target = work / f"{folder.name}.tsv"
    if not target.exists():
        part = target.with_suffix(".part")
        with open(part, "wb") as out:
            for path in sorted(folder.glob("msmarco_passage_*")):
                frame = pl.read_ndjson(path, schema={"pid": pl.String, "passage": pl.String})
                frame.write_csv(out, separator="\t", include_header=False, quote_style="never")
        part.rename(target)
    return target


def register_pool_report(work: Path, collection: Path, files: dict, *, tag: str) -> Iterator[str | Step]:
    """Every command a user types, on a new SQLite database in ``work/site``: a progress line before each step
    and its :class:`Step` after it (disk not measured). ``collection``: a folder of bundles, registered by
    reference, or a ``pid<TAB>passage`` file, imported with the full scan; the pool and the report are written
    to ``work/pooled-<tag>.tsv`` and ``work/report-<tag>.csv``."""
    _site, env = new_site(work)
    names = [p.stem for p in files["runs"]]
    steps = [
        ("migrate", ["migrate", "-v", "0"]),
        (
            "import_collection --by-reference" if collection.is_dir() else "import_collection (full scan)",
            [
                "import_collection",
                str(collection),
                "--name",
                "v2",
                *(["--by-reference"] if collection.is_dir() else []),
            ],
        ),
        ("import_queries", ["import_queries", str(files["queries"]), "--name", "dl"]),
        (
            f"import_run ({len(names)} runs)",
            ["import_run", *map(str, files["runs"]), "--collection", "v2", "--order", "file"],
        ),
        (
            "pool",
            [
                *("pool", "--name", "pool", "--queries", "dl", "--runs", ",".join(names)),
                *("--rank-cutoff", "10", "--depth", "500", "--out", str(work / f"pooled-{tag}.tsv")),
            ],
        ),
        (
            f"bias_report ({V2['report_runs']} runs)",
            [
                *("bias_report", "--queries", "dl", "--runs", ",".join(names[: V2["report_runs"]])),
                *("--cutoffs", "5,10,20,30", "--name", "v2-report", "--out", str(work / f"report-{tag}.csv")),
            ],
        ),
    ]
    yield from timed_steps([(name, [*arguments, "-v", "0"]) for name, arguments in steps], env)


def measured(steps: list[Step]) -> Step:
    """The steps after ``migrate`` added up (peak: the largest): registration + pool + report."""
    counted = [step for step in steps if step.name != "migrate"]
    return Step(
        "registration + pool + report",
        sum(s.seconds for s in counted),
        sum(s.cpu_seconds for s in counted),
        max(s.peak_mb for s in counted),
        0.0,
    )

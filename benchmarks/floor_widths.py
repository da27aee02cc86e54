"""Benchmark: the crowd-model interval's width against the known-confusion floor and the true labels' (issue 81, item 5).

Per study, drawn as :func:`genderbias.crowd.simulation.coverage.coverage_study` draws it (seeds ``[2040, study]``):
the product's interval, the true labels' (``oracle``) and the known-confusion floor
(:func:`genderbias.crowd.simulation.coverage.floor_intervals`). Prints per crowd and figure the coverages and the
median width ratios; ``--constructions`` adds every construction of :data:`genderbias.stats.intervals.CONSTRUCTIONS`
from the same draws. ``--out`` keeps the rows (one a study), ``--read`` prints the table of kept rows again. The
method and its figures: docs/quality.md, "The item-difficulty model and the known-confusion floor". Pure library
(no Django).
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time

import numpy as np
import pandas as pd

from benchmarks.audit_coverage import SIMULATED, markdown
from genderbias.crowd.simulation import studies as cs
from genderbias.crowd.simulation.coverage import coverage_study

FIGURES = ("value", "difference")


def one(args: tuple) -> dict:
    crowd, queries, study, samples, constructions = args
    rng = np.random.default_rng([2040, study])
    out = coverage_study(rng, cs.crowd_named(crowd, queries), queries, study, samples, constructions=constructions)
    keep = {k: v for k, v in out.items() if k.split(":")[0] in FIGURES or k in ("warning", "trusted")}
    return {"crowd": crowd, "queries": queries, "study": study} | keep


def table(rows: pd.DataFrame) -> pd.DataFrame:
    out = {}
    for (crowd, queries), group in rows.groupby(["crowd", "queries"], sort=False):
        for figure in FIGURES:
            covered = group[figure].astype(float)
            se = np.sqrt(max(covered.mean() * (1 - covered.mean()), 1 / len(group)) / len(group))
            floor = group[f"{figure}:floor_width"].astype(float)
            warned = group["warning"].astype(bool)
            ratio = group[f"{figure}:width"].astype(float) / floor
            out[(crowd, queries, figure)] = {
                "studies": len(group),
                "coverage": f"{covered.mean():.3f} ({se:.3f})",
                "floor covers": f"{group[f'{figure}:floor'].astype(float).mean():.3f}",
                "true labels cover": f"{group[f'{figure}:oracle'].astype(float).mean():.3f}",
                "width / floor": f"{ratio.median():.2f}",
                "unwarned width / floor": f"{ratio[~warned].median():.2f}" if (~warned).any() else "–",
                "floor / oracle": f"{(floor / group[f'{figure}:oracle_width'].astype(float)).median():.2f}",
                "warned": f"{warned.mean():.2f}",
            }
            if "trusted" in group:  # the crowd model trusted: the product's interval is the rule's narrow one
                out[(crowd, queries, figure)]["trusted"] = f"{group['trusted'].astype(bool).mean():.2f}"
            if f"{figure}:width_percentile" in group:
                out[(crowd, queries, figure)] |= _constructions(group, figure, floor)
    frame = pd.DataFrame(out).T
    frame.index.names = ["crowd", "queries", "figure"]
    return frame


def _constructions(group: pd.DataFrame, figure: str, floor: pd.Series) -> dict:
    """With ``--constructions``: the refitted bootstrap's own interval (``percentile``) and ``crossed_net``
    (coverage, median width over the floor); the width over the floor an interval centred on the estimate
    needs to cover at 95% (``needed``: 2 · 1.96 · the estimate's root-mean-square error over the studies, in
    each study's bootstrap s.d., times that s.d.); the workers' and the answers' jackknife variances over the
    bootstrap's (what ``crossed`` adds, and what ``crossed_net`` takes back out of it)."""
    sd = group[f"{figure}:sd"].astype(float)
    rmse = float(np.sqrt(np.nanmean(group[f"{figure}:error"].astype(float) ** 2)))
    workers = group[f"{figure}:extra_crossed"].astype(float)
    answers = workers - group[f"{figure}:extra_crossed_net"].astype(float)
    row = {}
    for name in ("percentile", "crossed_net"):
        width = group[f"{figure}:width_{name}"].astype(float)
        row[name] = f"{group[f'{figure}:{name}'].astype(float).mean():.2f}, {(width / floor).median():.2f}"
    row["needed / floor"] = f"{(2 * 1.96 * rmse * sd / floor).median():.2f}"
    row["workers' jackknife / bootstrap var"] = f"{(workers / sd**2).median():.2f}"
    row["answers' jackknife / bootstrap var"] = f"{(answers / sd**2).median():.2f}"
    return row


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument(
        "--crowds", default="all", help=f"comma-separated simulated crowds ({', '.join(SIMULATED)}) or all"
    )
    parser.add_argument("--queries", type=int, default=1000, help="queries a study")
    parser.add_argument("--studies", type=int, default=40, help="studies a crowd")
    parser.add_argument(
        "--first",
        type=int,
        default=0,
        help="the first study's number (its seed is [2040, number]): seeds apart per run",
    )
    parser.add_argument("--samples", type=int, default=200, help="bootstrap draws a study (a report takes 1,000)")
    parser.add_argument("--processes", type=int, default=2, help="studies computed side by side")
    parser.add_argument(
        "--constructions", action="store_true", help="also the bootstrap's own and crossed_net intervals (slower)"
    )
    parser.add_argument("--out", metavar="CSV", help="also write each study's row to this file")
    parser.add_argument("--read", metavar="CSV", help="only print the table of the rows kept in this file (of --out)")
    options = parser.parse_args()
    if options.read:
        print(markdown(table(pd.read_csv(options.read)).reset_index()))
        return
    crowds = SIMULATED if options.crowds == "all" else tuple(options.crowds.split(","))
    jobs = [
        (c, options.queries, s, options.samples, options.constructions)
        for c in crowds
        for s in range(options.first, options.first + options.studies)
    ]
    started = time.time()
    done = []
    with multiprocessing.Pool(options.processes) as pool:
        for row in pool.imap(one, jobs, chunksize=1):
            done.append(row)
            # Written whole again as each study ends (a trusted study has no crossed columns): a stopped run keeps them
            if options.out:
                pd.DataFrame(done).to_csv(options.out, index=False)
            print(f"{len(done)} of {len(jobs)} studies, {time.time() - started:.0f} s", file=sys.stderr, flush=True)
    rows = pd.DataFrame(done)
    print(markdown(table(rows).reset_index()))
    print(f"\n{len(jobs)} studies in {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()

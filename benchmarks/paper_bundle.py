"""The paper bundle of a large report: how long its first build takes and a repeat download.

    DATABASE_URL=... .venv/bin/python -m benchmarks.paper_bundle REPORT --runs 7 --queries 5000

Takes an existing report's metric keys and settings and gives it a synthetic per-query file of ``runs`` ×
``queries`` values per key, ``run-0`` the baseline so every table has its t-tests; nothing is saved to the
database. Heavy libraries are imported first, as in a warm server. Prints the seconds of
:func:`publishing.services.paper.paper_zip` (what the ``metrics.paper`` job does once) and of serving the kept
zip (every later download). See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from benchmarks.measure import setup_django


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--queries", type=int, default=5000)
    args = parser.parse_args()
    setup_django()
    import matplotlib  # noqa: F401  (a warm server has them loaded)
    import numpy as np
    import pandas as pd
    import scipy.stats  # noqa: F401

    from metrics import selectors
    from metrics.formatting import order_summary
    from metrics.models import Report
    from publishing.services import paper

    report = Report.objects.get(name=args.report)
    keys = selectors.report_per_query(report)[["metric", "variant", "cutoff"]].drop_duplicates()
    columns = selectors.report_summary(report).columns
    rng = np.random.default_rng(0)
    runs, qids = [f"run-{i}" for i in range(args.runs)], [str(i) for i in range(args.queries)]
    frame = pd.concat(
        [
            pd.DataFrame(
                {
                    "run": run,
                    "qid": qids,
                    "metric": k.metric,
                    "variant": k.variant,
                    "cutoff": k.cutoff,
                    "value": rng.normal(0.1, 0.3, args.queries),
                }
            )
            for k in keys.itertuples(index=False)
            for run in runs
        ],
        ignore_index=True,
    )
    summary = frame.groupby(["run", "metric", "variant", "cutoff"], sort=False)["value"]
    summary = summary.agg(value="mean", queries="count").reset_index()
    summary["ci_low"], summary["ci_high"], summary["p_value"] = summary["value"] - 0.01, summary["value"] + 0.01, None
    summary = order_summary(summary.reindex(columns=columns))
    with tempfile.TemporaryDirectory() as folder:
        report.per_query = os.path.join(folder, "per-query.parquet")
        frame.to_parquet(report.per_query, index=False)
        report.run_order, report.label_batch_id = runs, None
        selectors.report_summary = lambda _report: summary
        table = selectors.report_table
        selectors.report_table = lambda rep, layout, **kw: table(rep, layout, **{"baseline": "run-0", **kw})
        print(f"{report.name}: {len(frame):,} per-query values ({args.runs} runs × {args.queries:,} queries)")
        del frame
        started = time.perf_counter()
        body = paper.paper_zip(report)
        print(f"first build (paper_zip): {time.perf_counter() - started:.1f} s, {len(body):,} bytes")
        paper.build_paper_zip(report)
        started = time.perf_counter()
        path = paper.cached_paper_zip(report)
        served = path.read_bytes()
        print(f"repeat download (the kept zip): {1000 * (time.perf_counter() - started):.1f} ms, {len(served):,} bytes")


if __name__ == "__main__":
    main()

"""Reports as people read them: CSV files, the terminal table, the paper's row order.

Pure (no Django): takes the frames that :mod:`metrics.selectors` and
:func:`metrics.services.compute_report` return.
"""

from __future__ import annotations

import csv
import io

import pandas as pd

from .defaults import METRICS

CSV_HEADER = ["run", "metric", "variant", "cutoff", "value", "queries"]
PER_QUERY_COLUMNS = ["run", "qid", "metric", "variant", "cutoff", "value"]


def order_summary(summary: pd.DataFrame) -> pd.DataFrame:
    """Rows in the order of the paper's tables: run, then metric (RaB, ARaB, NFaiRR, TExFAIR), variant, cutoff."""
    if not len(summary):
        return summary
    runs = list(dict.fromkeys(summary["run"]))
    order = summary.assign(
        _run=summary["run"].map(runs.index),
        _metric=summary["metric"].map(METRICS.index),
        _variant=summary["variant"].map(lambda v: (-1, "") if v in ("tf", "rbdf") else (0, v)),
    )
    order = order.sort_values(["_run", "_metric", "_variant", "cutoff"], kind="stable")
    return order.drop(columns=["_run", "_metric", "_variant"]).reset_index(drop=True)


def results_csv(summary: pd.DataFrame) -> str:
    """CSV with the header ``run,metric,variant,cutoff,value,queries`` (values in full precision)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for row in summary.itertuples(index=False):
        value = "" if row.value is None or pd.isna(row.value) else repr(float(row.value))
        writer.writerow([row.run, row.metric, row.variant, int(row.cutoff), value, int(row.queries)])
    return out.getvalue()


def per_query_csv(per_query: pd.DataFrame) -> str:
    out = io.StringIO()
    per_query[PER_QUERY_COLUMNS].to_csv(out, index=False, lineterminator="\n")
    return out.getvalue()


def columns_of(summary: pd.DataFrame) -> list[tuple[str, str, int]]:
    """(metric, variant, cutoff) columns of a results table, in the paper's order."""
    return list(dict.fromkeys(zip(summary["metric"], summary["variant"], summary["cutoff"], strict=True)))


def terminal_table(summary: pd.DataFrame, alpha: float = 0.05) -> str:
    """A plain-text table like Table 3 of the SIGIR 2020 paper: one block per metric and variant,
    rows = runs, columns = cutoffs; ``*`` marks p < alpha against the baseline (Bonferroni)."""
    if not len(summary):
        return "(no results)"
    runs = list(dict.fromkeys(summary["run"]))
    width = max(12, *(len(r) for r in runs)) + 2
    lookup = {(r.run, r.metric, r.variant, r.cutoff): r for r in summary.itertuples(index=False)}
    blocks = []
    groups = list(dict.fromkeys((m, v) for m, v, _ in columns_of(summary)))
    for metric, variant in groups:
        cutoffs = sorted({c for m, v, c in columns_of(summary) if (m, v) == (metric, variant)})
        title = f"{metric} [{variant}]"
        header = f"{title:<{width}}" + "".join(f"{'@' + str(c):>11}" for c in cutoffs) + f"{'queries':>9}"
        lines = [header, "-" * len(header)]
        for run in runs:
            cells = []
            queries = ""
            for c in cutoffs:
                row = lookup.get((run, metric, variant, c))
                if row is None or row.value is None or pd.isna(row.value):
                    cells.append(f"{'–':>11}")
                    continue
                mark = "*" if row.p_value is not None and not pd.isna(row.p_value) and row.p_value < alpha else " "
                cells.append(f"{row.value:>10.4f}{mark}")
                queries = str(row.queries)
            lines.append(f"{run:<{width}}" + "".join(cells) + f"{queries:>9}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)

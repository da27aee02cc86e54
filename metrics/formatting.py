"""Reports as people read them: CSV files, the terminal table, the paper's row order (pure: no Django)."""

from __future__ import annotations

import math
from typing import IO, TYPE_CHECKING

import pandas as pd

from core.figure_notes import SIGN_WARNING, figure_notes, p_value_text
from core.spreadsheet import csv_text, write_csv
from genderbias.ranking.defaults import (
    AGGREGATIONS,
    DISPUTED_POLICIES,
    LABEL_SOURCE,
    LABEL_SOURCES,
    LABEL_UNCERTAINTY_COLUMNS,
)
from genderbias.ranking.vocabulary import metric_position, variant_position

if TYPE_CHECKING:
    from genderbias.crowd.sensitivity import LabelSensitivity

CSV_HEADER = ["run", "metric", "variant", "cutoff", "value", "queries"]
PER_QUERY_COLUMNS = ["run", "qid", "metric", "variant", "cutoff", "value"]
#: What the per-query CSV adds to each value: the figures the report shows for its run.
SUMMARY_COLUMNS = ["mean", "ci_low", "ci_high", "p_value", "significance"]
PER_QUERY_CSV_COLUMNS = [*PER_QUERY_COLUMNS, *SUMMARY_COLUMNS]
#: What the per-query CSV of a report on a batch's labels adds: the query's labels, whether it is in the
#: point-estimate set, and the run's corrected value and difference (recomputable from the file: docs/metrics.md).
PER_QUERY_LABEL_COLUMNS = [
    "in_set",
    "label",
    "label_source",
    "p_n",
    "p_f",
    "p_m",
    "p_o",
    "corrected",
    "difference_corrected",
]


#: The widest line the command line prints: prose wraps to it, wide tables go on in blocks of columns.
TEXT_WIDTH = 100


def wrap(text: str, width: int = TEXT_WIDTH) -> str:
    """Prose as the command line prints it: each line of ``text`` wrapped to ``width`` characters (a
    word, a path or a name longer than that stays whole)."""
    import textwrap

    return "\n".join(
        textwrap.fill(line, width, break_long_words=False, break_on_hyphens=False) if line.strip() else line
        for line in text.splitlines()
    )


def order_summary(summary: pd.DataFrame) -> pd.DataFrame:
    """Rows in the order of the paper's tables: run, then metric (RaB, ARaB, NFaiRR, TExFAIR), variant, cutoff."""
    if not len(summary):
        return summary
    runs = list(dict.fromkeys(summary["run"]))
    order = summary.assign(
        _run=summary["run"].map(runs.index),
        _metric=summary["metric"].map(metric_position),
        _variant=summary["variant"].map(variant_position),
    )
    order = order.sort_values(["_run", "_metric", "_variant", "cutoff"], kind="stable")
    return order.drop(columns=["_run", "_metric", "_variant"]).reset_index(drop=True)


#: What the results CSV of a report on a batch's labels adds (:mod:`genderbias.crowd.label_uncertainty`).
LABEL_CSV_COLUMNS = ["ci_low", "ci_high", "p_value", *LABEL_UNCERTAINTY_COLUMNS]


#: What the results CSV adds with the report's order of ties: the lowest and highest value over the
#: orders of tied documents (empty where no order of ties moves it) and the order the values used.
TIE_CSV_COLUMNS = ["tie_low", "tie_high", "ties"]
#: The last column of the results CSV: what the report says of the figure (:func:`figure_notes`), ``; ``-joined.
NOTES_CSV_COLUMN = "notes"


def interval_notes(notes: list[str], sentence: str | None, corrected) -> list[str]:
    """A figure's notes and, for a label-corrected one, which interval it got and why (``sentence``:
    :attr:`metrics.models.Report.interval_sentence`), as the CSV and the API say it."""
    if sentence and corrected is not None and not (isinstance(corrected, float) and math.isnan(corrected)):
        return [*notes, f"label-corrected interval: {sentence}"]
    return notes


def results_csv(
    summary: pd.DataFrame, ties: str | None = None, crowd_quality: dict | None = None, interval: str | None = None
) -> str:
    """CSV of :data:`CSV_HEADER` in full precision, plus :data:`LABEL_CSV_COLUMNS` for a report on a batch's
    labels, :data:`TIE_CSV_COLUMNS` with ``ties``, and :data:`NOTES_CSV_COLUMN` with ties, ``crowd_quality`` or
    ``interval`` (the sentence of which interval the label-corrected figures got); empty where undefined."""
    extra = LABEL_CSV_COLUMNS if "combined_low" in summary.columns else []
    if ties is not None:
        summary = summary.assign(ties=ties)
        for column in ("tie_low", "tie_high"):
            if column not in summary.columns:
                summary[column] = None
        extra = [*extra, *TIE_CSV_COLUMNS]
    if ties is not None or crowd_quality is not None or interval:
        notes = [
            "; ".join(interval_notes(figure_notes(row, crowd_quality).texts(), interval, row.get("corrected")))
            for row in summary.to_dict("records")
        ]
        summary = summary.assign(**{NOTES_CSV_COLUMN: notes})
        extra = [*extra, NOTES_CSV_COLUMN]
    rows = summary[CSV_HEADER + extra].itertuples(index=False, name=None)
    return csv_text(
        CSV_HEADER + extra,
        (
            [run, metric, variant, int(cutoff), value, int(queries), *(_blank(v) for v in rest)]
            for run, metric, variant, cutoff, value, queries, *rest in rows
        ),
    )


def _blank(value):
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else value


def tie_lines(tied_queries: dict | None, summary: pd.DataFrame, *, ranges: bool = True) -> list[str]:
    """Per run and cutoff how many queries' top k hold a tie, and each figure an order of ties moves, with its
    range and a warning when the range of a signed figure holds 0."""
    if tied_queries is None:
        return ["Tied documents were not counted in this report (built before they were): build it again."]
    lines = []
    for run, by_cutoff in tied_queries.items():
        counts = ", ".join(f"@{k}: {n}" for k, n in sorted(by_cutoff.items(), key=lambda item: int(item[0])))
        queries = summary.loc[summary["run"] == run, "queries"]
        total = f" of {int(queries.max())}" if len(queries) else ""
        lines.append(f"Queries whose top k holds a tied document, {run}{total}: {counts}.")
    if not ranges or "tie_low" not in summary.columns:
        return lines
    moved = summary[summary["tie_low"].notna() & summary["tie_high"].notna()]
    if len(moved):
        lines.append("Figures the order of ties moves (value, then lowest … highest over every order of ties):")
    for row in moved.itertuples(index=False):
        notes = figure_notes(row)
        warning = f"  ! holds 0: {SIGN_WARNING}" if notes.sign_undecided else ""
        lines.append(
            f"  {row.run} {row.metric} [{row.variant}] @{int(row.cutoff)}: {row.value:.4f} "
            f"({notes.tie_low:.4f} … {notes.tie_high:.4f}){warning}"
        )
    return lines


def figure_text(value, spec: str = ".4f") -> str:
    """A figure as the terminal prints it, ``–`` where undefined (None or NaN)."""
    return "–" if value is None or pd.isna(value) else format(value, spec)


def p_mark(p: float | None, alpha: float = 0.05) -> str:
    """``*`` when ``p`` is below ``alpha``: the one rule of the text and LaTeX uncertainty tables."""
    return "*" if p is not None and not pd.isna(p) and p < alpha else ""


def uncertainty_table(summary: pd.DataFrame, cutoff: int, alpha: float = 0.05, kind: str | None = None) -> str:
    """A report on a batch's labels at one cutoff, as text: value and corrected value with their intervals, the
    labels' share, and the difference against the baseline. ``kind`` (:func:`genderbias.crowd.figure_intervals.
    interval_choice`): ``audit`` heads PPI++; ``may_not_cover`` prints no corrected interval as a 95% one."""
    rows = summary[summary["cutoff"] == cutoff]
    if not len(rows) or "combined_low" not in rows.columns:
        return "(no label-uncertainty figures)"
    withheld = kind == "may_not_cover"
    heading = {"audit": "PPI++ 95%", "may_not_cover": "with labels"}.get(kind, "with labels 95%")

    def interval(low, high, corrected=True) -> str:
        if withheld and corrected:
            return "may not cover"
        return "–" if low is None or pd.isna(low) else f"[{low:.4f}, {high:.4f}]"

    width = max(10, *(len(r) for r in rows["run"])) + 2
    header = (
        f"{'run':<{width}}{'value':>8} {'query-only 95%':>20} {'corrected':>10} {heading:>20} {'labels':>7}"
        f"   {'Δ query-only 95%':>20} {'Δ ' + heading:>20} {'p':>8}"
    )
    blocks = []
    for (metric, variant), part in rows.groupby(["metric", "variant"], sort=False):
        lines = [f"{metric} [{variant}] @{cutoff}", header, "-" * len(header)]
        for r in part.itertuples(index=False):
            p = r.p_value
            mark = p_mark(p, alpha) or " "
            lines.append(
                f"{r.run:<{width}}{figure_text(r.value):>8} {interval(r.ci_low, r.ci_high, False):>20} "
                f"{figure_text(r.corrected):>10} "
                f"{interval(r.combined_low, r.combined_high):>20} {figure_text(r.label_share, '.0%'):>7}"
                f"   {interval(r.difference_low, r.difference_high, False):>20} "
                f"{interval(r.difference_combined_low, r.difference_combined_high):>20} "
                f"{figure_text(p):>7}{mark}"
            )
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def crowd_quality_note(quality: dict | None) -> str:
    """The crowd's informativeness in one line, and the warning when the label-corrected intervals are not to be
    trusted (:func:`genderbias.crowd.label_probabilities.crowd_quality`)."""
    if not quality or quality.get("information") is None:
        return ""
    said = (
        f"Crowd: {quality['information']:.2f} bits about the true label per answer "
        f"({quality['workers']} workers, {quality['uninformative']:.0%} of the answers from uninformative ones)"
    )
    if quality.get("warning"):
        reasons = quality.get("reasons") or ["information"]
        why = []
        if "information" in reasons:
            why.append(
                f"the crowd is too poor: {quality['information']:.2f} bits per answer, below "
                f"{quality['threshold']:.2f}, under which simulated studies' intervals covered the truth "
                "less than 90% of the time"
            )
        if "misfit" in reasons:
            split = quality.get("split") or {}
            why.append(
                f"the crowd model does not fit the answers: {split.get('observed', 0):.0f} queries split with no "
                f"two answers alike where the model expects {split.get('expected', 0):.0f} (misfit "
                f"z = {quality['misfit']:.1f}); the votes on a query are not independent given its label"
            )
        if "sparse" in reasons:
            why.append(
                f"{quality['sparse']:.0%} of the answers come from workers with fewer than "
                f"{quality['min_worker_answers']} answers, whose reliability the model estimates from too few"
            )
        if "selected" in reasons:
            why.append(
                f"the answers of {quality['discarded']} assignment{'' if quality['discarded'] == 1 else 's'} that failed "
                "gold were discarded, so the labels "
                "come from the assignments that passed: if a worker's attention varies between HITs, the kept "
                "answers are better than the model's reading of that worker"
            )
        return (
            f"WARNING: the intervals with labels may be too narrow ({'; '.join(why)}; docs/quality.md); they reach "
            "further towards where the truth lies, as far as the crowd model's posteriors proved too sure on "
            f"crowds drawn from it and refitted. {said}."
        )
    return said + "."


def write_per_query_csv(
    handle: IO[str], per_query: pd.DataFrame, summary: pd.DataFrame | None = None, policy: str = ""
) -> int:
    """Write one row per run, query, metric, variant and cutoff to ``handle`` a row at a time (the file can be
    hundreds of MB: docs/deployment.md); returns the row count.

    With the report's ``summary`` each row also carries its run's :data:`SUMMARY_COLUMNS`, so the file alone
    redraws the report's table (``policy``: how p was made). A report on a batch's labels adds
    :data:`PER_QUERY_LABEL_COLUMNS`; ``mean`` stays the point-estimate set's (``in_set`` true).
    """
    labelled = "in_set" in per_query.columns
    base = PER_QUERY_COLUMNS + ([c for c in PER_QUERY_LABEL_COLUMNS if c in per_query.columns] if labelled else [])
    if summary is None:
        return write_csv(handle, base, per_query[base].itertuples(index=False, name=None))
    kept = ["run", "metric", "variant", "cutoff", "value", "ci_low", "ci_high", "p_value"]
    if labelled:
        kept += [c for c in ("corrected", "difference_corrected") if c in summary.columns]
    shown = summary[kept].rename(columns={"value": "mean"}).astype({"cutoff": "int64"})
    frame = per_query[base].astype({"cutoff": "int64"})
    frame = frame.merge(shown, on=["run", "metric", "variant", "cutoff"], how="left")
    frame["significance"] = [policy if p is not None and not pd.isna(p) else "" for p in frame["p_value"]]
    columns = PER_QUERY_CSV_COLUMNS + ([c for c in PER_QUERY_LABEL_COLUMNS if c in frame.columns] if labelled else [])
    return write_csv(handle, columns, frame[columns].itertuples(index=False, name=None))


def unjudged_note(qrels: str, unjudged: list[str], limit: int = 20) -> str:
    """The queries without judgments, in words: how many, and which (the first ``limit``)."""
    if not unjudged:
        return f"Effectiveness against qrels {qrels!r}: every query is judged."
    shown = ", ".join(unjudged[:limit]) + (f", … ({len(unjudged) - limit} more)" if len(unjudged) > limit else "")
    return (
        f"Effectiveness against qrels {qrels!r}: {len(unjudged)} quer{'y' if len(unjudged) == 1 else 'ies'} of "
        f"the query set without judgments, listed with empty values and left out of the means: {shown}"
    )


def unreturned_note(unreturned: dict[str, list[str]] | None, limit: int = 20) -> str:
    """Per run, the judged queries it did not return, in words (each counts as 0, as in trec_eval -c)."""
    if unreturned is None:
        return "Built before judged queries a run did not return counted as 0: build the report again."
    missing = {run: qids for run, qids in unreturned.items() if qids}
    if not missing:
        return "Every run returns every judged query."
    lines = ["Judged queries a run did not return count as 0 in its effectiveness (ir_measures, trec_eval -c):"]
    for run, qids in missing.items():
        shown = ", ".join(qids[:limit]) + (f", … ({len(qids) - limit} more)" if len(qids) > limit else "")
        lines.append(f"  {run}: {len(qids)} ({shown})")
    return "\n".join(lines)


def columns_of(summary: pd.DataFrame) -> list[tuple[str, str, int]]:
    """(metric, variant, cutoff) columns of a results table, in the paper's order."""
    return list(dict.fromkeys(zip(summary["metric"], summary["variant"], summary["cutoff"], strict=True)))


def terminal_table(summary: pd.DataFrame, alpha: float = 0.05) -> str:
    """A plain-text table like Table 3 of the SIGIR 2020 paper: a block per metric and variant, runs by cutoffs;
    ``*`` marks p < alpha against the baseline, with the p-values on a line under the run."""
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
            ps = [lookup.get((run, metric, variant, c)) for c in cutoffs]
            ps = [None if r is None or r.p_value is None or pd.isna(r.p_value) else r.p_value for r in ps]
            if any(p is not None for p in ps):
                lines.append(
                    f"{'':<{width}}" + "".join(f"{'' if p is None else 'p ' + p_value_text(p):>10} " for p in ps)
                )
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


# --- label sensitivity ---------------------------------------------------------------------


def order_sensitivity(table: pd.DataFrame, runs: list[str]) -> pd.DataFrame:
    """Label-sensitivity rows by aggregation, disputed policy, run (as given), then the paper's order."""
    if not len(table):
        return table
    order = table.assign(
        _a=table["aggregation"].map((*AGGREGATIONS, LABEL_SOURCE).index),
        _d=table["disputed"].map((*DISPUTED_POLICIES, *LABEL_SOURCES).index),
        _run=table["run"].map(runs.index),
        _metric=table["metric"].map(metric_position),
        _variant=table["variant"].map(variant_position),
    )
    order = order.sort_values(["_a", "_d", "_run", "_metric", "_variant", "cutoff"], kind="stable")
    return order.drop(columns=["_a", "_d", "_run", "_metric", "_variant"]).reset_index(drop=True)


def sensitivity_csv(table: pd.DataFrame) -> str:
    """CSV of :data:`genderbias.crowd.sensitivity.CSV_COLUMNS` (full precision, empty where undefined)."""
    from genderbias.crowd.sensitivity import CSV_COLUMNS

    rows = table[CSV_COLUMNS].itertuples(index=False, name=None)
    return csv_text(CSV_COLUMNS, ([*row[:5], int(row[5]), *row[6:9], int(row[9])] for row in rows))


def dependence_csv(table: pd.DataFrame) -> str:
    """CSV of :func:`genderbias.crowd.label_dependence.dependence_table` (empty where undefined)."""
    from genderbias.crowd.label_dependence import DEPENDENCE_COLUMNS

    return csv_text(DEPENDENCE_COLUMNS, table[DEPENDENCE_COLUMNS].itertuples(index=False, name=None))


def rankings_csv(rankings: pd.DataFrame) -> str:
    """CSV of :func:`genderbias.crowd.sensitivity.ranking_changes` (τ empty where undefined)."""
    columns = list(rankings.columns)
    return csv_text(columns, rankings.itertuples(index=False, name=None))


def rankings_text(result: LabelSensitivity) -> str:
    """Plain-text summary: per configuration, metric and cutoff, τ against majority/drop and the swaps."""
    from genderbias.crowd.sensitivity import BASELINE

    lines = [
        f"Label sensitivity of batch {result.batch!r}: runs {', '.join(result.runs)}; NFaiRR normalised "
        f"{result.nfairr_normalisation}; confident = confidence >= {result.threshold}.",
        "Non-gendered queries per aggregation / disputed policy:",
    ]
    for (aggregation, policy), size in result.set_sizes.items():
        lines.append(f"  {aggregation:<12} {policy:<12} {size:>6}")
    changed = result.rankings[
        (result.rankings["swapped"] != "")
        & ~((result.rankings["aggregation"] == BASELINE[0]) & (result.rankings["disputed"] == BASELINE[1]))
    ]
    if changed.empty:
        lines.append("The ranking of the runs is the same as with majority/drop for every metric and cutoff.")
    else:
        lines.append("Rankings that change against majority/drop (Kendall's tau; pairs that swap):")
        for row in changed.itertuples(index=False):
            lines.append(
                f"  {row.aggregation}/{row.disputed} {row.metric}[{row.variant}]@{row.cutoff}: "
                f"tau {figure_text(row.kendall_tau, '+.3f')}; {row.swapped}"
            )
    return "\n".join(lines)


def dependence_text(result: LabelSensitivity) -> str:
    """Plain-text table of the check for ranking-dependent labelling errors (empty without one)."""
    table = result.dependence
    if table is None:
        return ""
    lines = [
        f"If labelling errors depend on the rankings (odds of a wrong label x exp(D*z), z = {result.baseline}'s "
        "standardised value): the label-corrected difference against it, its combined interval moved by the "
        "shift, and whether the interval excludes 0.",
        "  The shift: the batch's crowd refitted as if it erred that way (label shares per band of z), true labels "
        "and answers redrawn from that refit with every answer's error odds x exp(D*z) and without, refitted "
        "(mean of a few replicates). On simulated crowds that erred so it has the truth's sign and about 0.7 of "
        "its size, half with many spammers: a lower bound (docs/metrics.md). Without a crowd fit, the label "
        "probabilities are tilted instead, which understates it more. A shift printed – is undefined: a replicate "
        "batch gave no label-corrected difference (as a report gives none where no query has a value).",
        f"  {'run':<12} {'metric':<18} {'D':>6} {'difference':>11} {'shift':>9}  interval",
    ]
    for row in table.itertuples(index=False):
        metric = f"{row.metric}[{row.variant}]@{row.cutoff}"
        mark = {True: "*", False: ""}.get(row.significant, "–")
        lines.append(
            f"  {row.run:<12} {metric:<18} {row.dependence:>6.2f} {figure_text(row.difference_corrected, '+.4f'):>11} "
            f"{figure_text(row.shift, '+.4f'):>9}  [{figure_text(row.difference_combined_low, '+.4f')}, "
            f"{figure_text(row.difference_combined_high, '+.4f')}] {mark}"
        )
    return "\n".join(lines)


def sensitivity_result(result: LabelSensitivity) -> dict:
    """JSON-safe :class:`~genderbias.crowd.sensitivity.LabelSensitivity` (NaN as ``None``) for the API and the page."""

    def plain(records):
        return [
            {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}
            for row in records
        ]

    return {
        "batch": result.batch,
        "runs": result.runs,
        "cutoffs": result.cutoffs,
        "threshold": result.threshold,
        "nfairr_normalisation": result.nfairr_normalisation,
        "set_sizes": {f"{a}/{d}": n for (a, d), n in result.set_sizes.items()},
        "rows": plain(result.table.to_dict("records")),
        "rankings": plain(result.rankings.to_dict("records")),
        "baseline": result.baseline,
        "dependence": None if result.dependence is None else plain(result.dependence.to_dict("records")),
    }

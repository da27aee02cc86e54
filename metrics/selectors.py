"""Reading reports back: their results, per-query values and free names."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotation.selectors import query_texts, remembered
from core import methods
from core.errors import ServiceError
from genderbias.labels import LABELS
from genderbias.ranking.defaults import LABEL_UNCERTAINTY_COLUMNS
from genderbias.ranking.vocabulary import BY_NAME
from pooling.models import QuerySet

from .models import Report

if TYPE_CHECKING:
    import pandas as pd


SUMMARY_FIELDS = [
    "metric",
    "variant",
    "cutoff",
    "value",
    "queries",
    "ci_low",
    "ci_high",
    "p_value",
    "tie_low",
    "tie_high",
]


def report_summary(report: Report) -> pd.DataFrame:
    """The report's results as a frame (``run, metric, variant, cutoff, value, queries, ci_low, ci_high,
    p_value``; a report on a batch's labels adds :data:`genderbias.ranking.defaults.LABEL_UNCERTAINTY_COLUMNS`)."""
    import pandas as pd

    fields = list(SUMMARY_FIELDS)
    if report.on_batch:
        fields += LABEL_UNCERTAINTY_COLUMNS
    rows = report.results.select_related("run").values_list("run__name", *fields)
    frame = pd.DataFrame(list(rows), columns=["run", *fields])
    from .formatting import order_summary

    return order_summary(frame)


def report_per_query(report: Report) -> pd.DataFrame:
    """Per-query values (``run, qid, metric, variant, cutoff, value``) of the report's query set;
    ServiceError if the file is gone."""
    frame = report_judged_values(report)
    if report.on_batch:  # the file holds every judged query; the report's values are the set's
        members = set(report_labels(report).query("in_set")["qid"])
        frame = frame[frame["qid"].isin(members)].reset_index(drop=True)
    return frame


def report_per_query_export(report: Report) -> pd.DataFrame:
    """What the per-query export holds: :func:`report_per_query`; for a report on a batch's labels, every judged
    query's values with its label probabilities, ``label``, ``label_source`` and ``in_set``: all the corrected
    figures are computed from (docs/metrics.md, "Recomputing the corrected figures from the export")."""
    if not report.on_batch:
        return report_per_query(report)
    labels = report_labels(report)
    probabilities = {c: f"p_{c}" for c in labels.columns if c not in ("qid", "source", "label", "in_set")}
    labels = labels.rename(columns=probabilities | {"source": "label_source"})
    frame = report_judged_values(report).merge(labels, on="qid", how="left")
    frame["in_set"] = frame["in_set"].fillna(False).astype(bool)
    return frame


def report_judged_values(report: Report) -> pd.DataFrame:
    """Per-query values of *every* judged query (of a report on a batch's labels: the set's and the others')."""
    return _read(report, report.per_query, "per-query file")


def report_labels(report: Report) -> pd.DataFrame:
    """A report on a batch's labels: ``qid``, the probability of each label, ``source``, ``label``, ``in_set``."""
    if not report.on_batch:
        raise ServiceError(f"report {report.name!r} is not on a batch's labels")
    return _read(report, report.labels_file, "label file")


def _read(report: Report, file: str, what: str, read=None):
    """The report's Parquet ``file`` read (``read``: polars' reader, the whole frame as pandas by default);
    ServiceError naming ``what`` when it is missing or unreadable."""
    import polars as pl

    path = Path(file)
    if not path.exists():
        raise ServiceError(f"the {what} of report {report.name!r} is missing ({path}); build the report again")
    try:
        return read(path) if read else pl.read_parquet(path).to_pandas()
    except (OSError, pl.exceptions.PolarsError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ServiceError(
            f"the {what} of report {report.name!r} cannot be read ({path}: {first}); build the report again"
        ) from None


def check_report_files(report: Report) -> None:
    """ServiceError if a file a report's values are read from is missing or not a readable Parquet
    file (its footer is read, not its rows): checked before long work is started on them."""
    import polars as pl

    files = [(report.per_query, "per-query file")]
    if report.on_batch:
        files.append((report.labels_file, "label file"))
    for file, what in files:
        _read(report, file, what, pl.read_parquet_schema)


def tradeoff_axes(summary: pd.DataFrame, x: str | None = None, y: str | None = None) -> dict[str, Any] | None:
    """The fairness–effectiveness plot's axes (page and paper alike): ``x`` among the effectiveness measures, ``y``
    among the bias metrics, by ``metric:variant@k`` name (default nDCG, or the first measure, against NFaiRR at its
    cutoff). ``{"x", "y", "effect", "fair"}``, or None without a measure or a bias metric."""
    keys = list(dict.fromkeys(zip(summary["metric"], summary["variant"], summary["cutoff"], strict=True)))
    effect = [k for k in keys if k[0] in BY_NAME and BY_NAME[k[0]].effectiveness]
    fair = [k for k in keys if k[0] in BY_NAME and not BY_NAME[k[0]].effectiveness]
    if not effect or not fair:
        return None
    chosen_x = next((k for k in effect if key_name(k) == x), None)
    chosen_x = chosen_x or next((k for k in effect if k[0] == "nDCG"), effect[0])
    chosen_y = next((k for k in fair if key_name(k) == y), None)
    chosen_y = chosen_y or next((k for k in fair if k[0] == "NFaiRR" and k[2] == chosen_x[2]), None) or fair[0]
    return {"x": chosen_x, "y": chosen_y, "effect": effect, "fair": fair}


def key_name(key: tuple[str, str, int]) -> str:
    """A result's key as the page's choices name it: ``metric:variant@cutoff``."""
    return f"{key[0]}:{key[1]}@{key[2]}"


def default_report_name(query_set: QuerySet, run_names: Sequence[str]) -> str:
    """``<query set>-<runs>`` (shortened), with ``-2``, ``-3``… if taken (a batch: ``<batch>-<runs>``)."""
    from django.utils.text import slugify

    base = slugify(f"{query_set.name}-{'-'.join(run_names)}")[:80].strip("-") or "report"
    name, i = base, 1
    while Report.objects.filter(name=name).exists():
        i += 1
        name = f"{base}-{i}"
    return name


def recent_reports(limit: int = 5):
    """The newest reports (query set and runs at hand), for the researchers' home page."""
    return Report.objects.select_related("query_set").prefetch_related("runs").order_by("-created", "-pk")[:limit]


def report_policy_text(report: Report) -> str:
    """How the report's p-values were made, in one sentence (:func:`genderbias.stats.significance.policy_text`)."""
    from genderbias.stats.significance import policy_text

    baseline = report.baseline.name if report.baseline_id else None
    if report.on_batch:
        from genderbias.crowd import label_uncertainty

        said = label_uncertainty.policy_text(baseline, report_interval(report))
        if baseline is not None and (report.label_interval or {}).get("kind") == "audit":
            policy = label_uncertainty.COMBINED_POLICY
            said = (
                f"p: {methods.AUDIT_TEST}, against {baseline}; family: {policy['family']}; "
                f"{policy['correction']}-adjusted; * p < {policy['alpha']} (the PPI++ interval excludes 0)."
            )
        return f"{said} Label-corrected intervals: {report.interval_sentence}." if report.interval_sentence else said
    return policy_text(baseline)


def report_interval(report: Report) -> str:
    """The interval construction that computed the report's intervals with labels, in words (its stored
    version, not today's: core.methods)."""
    return methods.describe("label_interval", (report.methods or {}).get("label_interval"))


def rebuilt_reports(report: Report) -> list[str]:
    """The names of the reports built again from ``report`` (:func:`metrics.services.start_rebuild`)."""
    return list(
        Report.objects.filter(name__startswith=f"{report.name[:88]}-rebuilt")
        .order_by("created")
        .values_list("name", flat=True)
    )


def method_changes(report: Report) -> list[dict[str, str]]:
    """The methods the report was computed with that today's version would compute otherwise."""
    return methods.changed(report.methods, "report_on_batch" if report.on_batch else "report")


def report_policy(report: Report) -> dict | None:
    """The report's significance policy as the API and CSV state it (None without a baseline)."""
    from genderbias.stats import significance

    baseline = report.baseline.name if report.baseline_id else None
    if baseline is None or not report.on_batch:
        return significance.policy(baseline)
    from genderbias.crowd.label_uncertainty import COMBINED_POLICY

    policy = {**COMBINED_POLICY, "interval": report_interval(report), "baseline": baseline}
    if report.interval_sentence:
        # With an audit sample the test is the PPI++ interval's, inverted (genderbias.crowd.figure_intervals).
        kind = report.label_interval["kind"]
        if kind == "audit":
            policy["test"] = methods.AUDIT_TEST
        policy |= {"label_interval": report.interval_sentence, "label_interval_kind": kind}
    return policy


def report_table(
    report: Report,
    layout: str,
    *,
    cutoff: int | None = None,
    baseline: str | None = None,
    correlate: str | None = None,
    summary: pd.DataFrame | None = None,
    per_query: pd.DataFrame | None = None,
) -> dict:
    """The ``layout`` table of a report (:func:`metrics.tables.build_table`), its CIs from the stored results;
    ``baseline`` defaults to the report's. ServiceError for a bad choice or a missing file. ``summary`` and
    ``per_query``: frames already read, so a caller building several tables reads the files once.

    Kept in the ``results`` cache per report and its answers version (a report is never rebuilt in place), so the
    page, the API and the paper bundle build a table once, not at every view."""
    if baseline is None and report.baseline_id:
        baseline = report.baseline.name

    def built() -> dict:
        from . import tables

        frame = report_summary(report) if summary is None else summary
        try:
            pairs = [tables.parse_pair(correlate)] if correlate else None
            table = tables.build_table(
                report_per_query(report) if per_query is None else per_query,
                layout,
                cutoff=cutoff,
                baseline=baseline or None,
                summary=frame,
                correlations=pairs,
            )
        except ValueError as exc:
            raise ServiceError(str(exc)) from None
        if report.on_batch and report.baseline_id and baseline == report.baseline.name:
            _combined_marks(table, frame, report_policy(report))
        return table

    version = f"{report.created.isoformat() if report.created else ''}:{report.answers_version}"
    key = f"report-{report.pk}:{version}:table:{layout}:{cutoff}:{baseline or ''}:{correlate or ''}"
    return remembered(key, built, generation=(f"report-{report.pk}", version))


def _combined_marks(table: dict, summary: pd.DataFrame, policy: dict) -> None:
    """A report on a batch's labels, against its own baseline: the table's p-values and marks are
    the report's (the combined test), so a comparison has one p-value wherever it is shown; the
    t-test's adjusted p stays as ``p_t``."""
    stored = {
        (r.run, r.metric, r.variant, int(r.cutoff)): r.p_value
        for r in summary.itertuples(index=False)
        if r.p_value is not None and r.p_value == r.p_value
    }
    for row in table["rows"]:
        for column, cell in zip(table["columns"], row["cells"], strict=True):
            p = stored.get((row["run"], column["metric"], column["variant"], column["cutoff"]))
            cell["p_t"], cell["p_value"], cell["p_raw"] = cell["p_value"], p, None
            cell["mark"] = "*" if p is not None and p < table["alpha"] else ""
    table["significance"] = policy


def report_contributions(report: Report, run: str, metric: str, variant: str, cutoff: int, limit: int = 50) -> dict:
    """A report on a batch's labels: the queries that move ``run``'s paired difference against the baseline on one
    metric, and whose labels are least certain (:func:`genderbias.crowd.class_means.contributions`). ServiceError
    for a report without a baseline, or an unknown column or run.
    """
    from genderbias.crowd.class_means import contribution_summary, contributions

    if not report.baseline_id:
        raise ServiceError(f"report {report.name!r} has no baseline: there is no paired difference to explain")
    baseline = report.baseline.name
    if run == baseline or run not in report.run_order:
        raise ServiceError(f"choose a run of report {report.name!r} other than its baseline {baseline}")
    labels = report_labels(report)
    values = report_judged_values(report)
    column = values[(values["metric"] == metric) & (values["variant"] == variant) & (values["cutoff"] == cutoff)]
    if column.empty:
        raise ServiceError(f"report {report.name!r} has no {metric} [{variant}] at cutoff {cutoff}")

    def series(name: str):
        part = column[column["run"] == name]
        return part.set_index(part["qid"].astype(str))["value"]

    by_qid = labels.set_index(labels["qid"].astype(str))
    probabilities = by_qid[[label for label in LABELS if label in by_qid.columns]]
    members = set(labels.loc[labels["in_set"], "qid"].astype(str))
    difference, table = contributions(series(run), series(baseline), probabilities, members)
    rows = [
        {
            **{key: None if isinstance(value, float) and value != value else value for key, value in row.items()},
            "source": by_qid.at[row["qid"], "source"] if row["qid"] in by_qid.index else None,
            "label": by_qid.at[row["qid"], "label"] if row["qid"] in by_qid.index else None,
        }
        for row in table.head(limit).to_dict("records")
    ]
    # Each query's text beside its id, as the label batch holds it.
    texts = query_texts(report.label_batch_id, [row["qid"] for row in rows])
    for row in rows:
        row["query"] = texts.get(row["qid"], "")
    return {
        "run": run,
        "baseline": baseline,
        "metric": metric,
        "variant": variant,
        "cutoff": cutoff,
        "difference": difference,  # label-corrected: the report's difference_corrected
        **contribution_summary(table),
        "rows": rows,
    }

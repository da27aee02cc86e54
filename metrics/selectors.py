"""Reading reports back: their results, per-query values and free names."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from core.errors import ServiceError
from pooling.models import QuerySet

from .models import Report

if TYPE_CHECKING:
    import pandas as pd


def report_summary(report: Report) -> pd.DataFrame:
    """The report's results as a frame (``run, metric, variant, cutoff, value, queries, ci_low, ci_high, p_value``)."""
    import pandas as pd

    rows = report.results.select_related("run").values_list(
        "run__name", "metric", "variant", "cutoff", "value", "queries", "ci_low", "ci_high", "p_value"
    )
    frame = pd.DataFrame(
        list(rows), columns=["run", "metric", "variant", "cutoff", "value", "queries", "ci_low", "ci_high", "p_value"]
    )
    from .formatting import order_summary

    return order_summary(frame)


def report_per_query(report: Report) -> pd.DataFrame:
    """Per-query values (``run, qid, metric, variant, cutoff, value``); ServiceError if the file is gone."""
    import polars as pl

    path = Path(report.per_query)
    if not path.exists():
        raise ServiceError(f"the per-query file of report {report.name!r} is missing ({path}); build the report again")
    return pl.read_parquet(path).to_pandas()


def default_report_name(query_set: QuerySet, run_names: Sequence[str]) -> str:
    """``<query set>-<runs>`` (shortened), with ``-2``, ``-3``… if taken."""
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
    """How the report's p-values were made, in one sentence (:func:`metrics.significance.policy_text`)."""
    from .significance import policy_text

    return policy_text(report.baseline.name if report.baseline_id else None)


def report_table(
    report: Report,
    layout: str,
    *,
    cutoff: int | None = None,
    baseline: str | None = None,
    correlate: str | None = None,
) -> dict:
    """The ``layout`` table of a report (:func:`metrics.tables.build_table`), its CIs from the stored
    results; ``baseline`` defaults to the report's. ServiceError for a bad choice or a missing file."""
    from . import tables

    if baseline is None and report.baseline_id:
        baseline = report.baseline.name
    try:
        pairs = [tables.parse_pair(correlate)] if correlate else None
        return tables.build_table(
            report_per_query(report),
            layout,
            cutoff=cutoff,
            baseline=baseline or None,
            summary=report_summary(report),
            correlations=pairs,
        )
    except ValueError as exc:
        raise ServiceError(str(exc)) from None

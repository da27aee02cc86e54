"""A computed report stored (:func:`store_report`): the per-query Parquet file written atomically before the
transaction that writes the report and its result rows, so a failure leaves no report."""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from django.db import transaction

from core import methods
from core.errors import ServiceError
from core.services.names import validate_name
from core.services.storage import cache_dir
from core.version import software_version
from genderbias.files.atomic import write_parquet_atomic
from genderbias.ranking.defaults import LABEL_UNCERTAINTY_COLUMNS
from pooling import services as pooling_services
from pooling.models import QuerySet, Run
from pooling.services import register_wordlist

from ..models import Report, Result
from .report_settings import ReportInputs, ReportSettings

if TYPE_CHECKING:
    import pandas as pd

    from genderbias.text.wordlists import GenderWords


@dataclass
class Computed:
    """What a report computes, before anything is stored: values and the inputs they came from."""

    per_query: pd.DataFrame
    summary: pd.DataFrame
    runs: list[Run] = field(default_factory=list)
    wordlist: GenderWords | None = None
    representative: GenderWords | None = None
    #: Effectiveness measures computed (empty without qrels) and the query-set queries the qrels do not judge.
    measures: tuple[str, ...] = ()
    unjudged: list[str] = field(default_factory=list)
    #: Per run, the judged queries it does not return (each counts as 0 in its effectiveness).
    unreturned: dict[str, list[str]] = field(default_factory=dict)
    #: A report on a batch's labels: every judged query's :class:`annotation.selectors.LabelProbabilities`.
    labels: object | None = None
    #: Per run, per cutoff: how many of its queries' top k hold a tied document.
    tied_queries: dict[str, dict[str, int]] = field(default_factory=dict)
    #: A collection by reference: the checksum of the texts read and how many (:meth:`_CountCache.texts_read`).
    texts_read: tuple[str, int] | None = None
    #: A report on a batch's labels: which interval its label-corrected figures got and why.
    label_interval: dict | None = None


def check_free_name(name: str) -> None:
    """A report may take ``name``: a valid name no report has (ServiceError otherwise)."""
    validate_name(name, "report")
    if Report.objects.filter(name=name).exists():
        raise ServiceError(f"a report named {name!r} already exists; choose another name")


def _labels_frame(labels, members: set[str]):
    import polars as pl

    table = labels.table
    return pl.DataFrame(
        {
            "qid": list(table.index),
            **{label: table[label].to_numpy() for label in table.columns},
            "source": [labels.source.get(q) for q in table.index],
            "label": [labels.label.get(q) for q in table.index],
            "in_set": [q in members for q in table.index],
        }
    )


def store_report(
    name: str, computed: Computed, report_settings: ReportSettings, inputs: ReportInputs, query_set: QuerySet | None
) -> Report:
    """``computed`` stored as the report ``name``: its per-query (and labels) Parquet written atomically first, then the
    report, its runs and result rows (and a batch report's query set) in one transaction; a failure leaves none.
    Each setting goes to the report's field of the same name."""
    import polars as pl

    from genderbias.ranking.ranked_counts import validate_cutoffs

    background, baseline, qrels = inputs.get("background"), inputs.get("baseline"), inputs.get("qrels")
    batch, labels = inputs.get("label_batch"), computed.labels
    settings = asdict(report_settings) | {
        "cutoffs": validate_cutoffs(report_settings.cutoffs),
        "measures": list(computed.measures),
    }
    stem = cache_dir("reports") / f"{name}-{uuid.uuid4().hex[:12]}"
    path, labels_path = stem.with_suffix(".parquet"), stem.with_name(stem.name + "-labels.parquet")
    from genderbias.ranking.ties import TIE_COLUMNS

    from ..formatting import PER_QUERY_COLUMNS

    stored = computed.per_query.reindex(columns=PER_QUERY_COLUMNS + TIE_COLUMNS)
    stored["tied"] = stored["tied"].fillna(False).astype(bool)
    write_parquet_atomic(pl.from_pandas(stored), path)
    if labels is not None:
        write_parquet_atomic(_labels_frame(labels, set(labels.non_gendered)), labels_path)
    by_name = {run.name: run for run in computed.runs}
    try:
        with transaction.atomic():
            if query_set is None:
                query_set = pooling_services.create_query_set(
                    f"{name}-non-gendered",
                    [(q, labels.texts[q]) for q in labels.non_gendered],
                    origin=QuerySet.Origin.ANNOTATION,
                    description=f"non-gendered queries of annotation batch {batch.name} (report {name})",
                )
            report = Report.objects.create(
                name=name,
                query_set=query_set,
                run_order=[run.name for run in computed.runs],
                wordlist=register_wordlist(computed.wordlist),
                representative_wordlist=register_wordlist(computed.representative),
                **settings,
                background_run=background,
                tied_queries=computed.tied_queries,
                baseline=baseline,
                qrels=qrels,
                unjudged=computed.unjudged,
                unreturned=computed.unreturned,
                software_version=software_version(),
                methods=methods.current(),
                texts_sha256=computed.texts_read[0] if computed.texts_read else "",
                texts_read=computed.texts_read[1] if computed.texts_read else None,
                per_query=str(path),
                label_batch=batch,
                labels_file=str(labels_path) if labels is not None else "",
                answers_version=labels.version if labels is not None else "",
                labels_calibrated=labels.calibrated
                if labels is not None and "machine-accepted" in labels.source.values()
                else None,
                crowd_quality=labels.quality if labels is not None else None,
                label_interval=computed.label_interval,
            )
            report.runs.set(computed.runs)
            Result.objects.bulk_create(
                [_result(report, by_name, row) for row in computed.summary.to_dict("records")], batch_size=2000
            )
    except BaseException:
        path.unlink(missing_ok=True)
        labels_path.unlink(missing_ok=True)
        raise
    return report


def _result(report: Report, by_name: dict[str, Run], row: dict) -> Result:
    return Result(
        report=report,
        run=by_name[row["run"]],
        metric=row["metric"],
        variant=row["variant"],
        cutoff=row["cutoff"],
        value=_finite(row["value"]),
        queries=row["queries"],
        ci_low=_finite(row["ci_low"]),
        ci_high=_finite(row["ci_high"]),
        p_value=_finite(row["p_value"]),
        tie_low=_finite(row.get("tie_low")),
        tie_high=_finite(row.get("tie_high")),
        **{field: _finite(row.get(field)) for field in LABEL_UNCERTAINTY_COLUMNS},
    )


def _finite(value) -> float | None:
    import pandas as pd

    if value is None or pd.isna(value):
        return None
    return float(value)

"""The pilot of a study plan (:mod:`metrics.services.planning`): per-query values of runs A and B on one metric,
variant and cutoff. Reads only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.errors import ServiceError
from core.options import CUTOFF_OPTION
from genderbias.ranking.vocabulary import BY_NAME
from genderbias.stats import plan_inputs
from metrics.selectors import report_per_query
from metrics.services.report_settings import ReportSettings
from metrics.services.reports import compute_report
from pooling.models import QuerySet, Run

from ..models import Report

#: The cutoff a plan is made at unless one is given.
DEFAULT_CUTOFF = CUTOFF_OPTION.default


@dataclass(frozen=True)
class Pilot:
    """Per-query differences A − B of one metric, variant and cutoff, and where they come from."""

    source: str  #: in words, for the output
    report: str | None  #: the stored report's name (None: computed on the fly)
    query_set: str
    run_a: str
    run_b: str
    metric: str
    variant: str
    cutoff: int
    qids: tuple[str, ...]
    differences: Any  #: numpy array, aligned with ``qids``
    stored: Report | None = None  #: the stored report itself (its baseline loaded), read once by :func:`find_pilot`


def _run(name: str) -> Run:
    run = Run.objects.filter(name=name).first()
    if run is None:
        raise ServiceError(f"no run named {name!r}")
    return run


def _variant(metric: str, variant: str | None, present: list[str]) -> str:
    """The variant asked for, else the paper's primary one, else the only one the pilot has."""
    if variant:
        if variant not in present:
            raise ServiceError(
                f"the pilot has no variant {variant!r} of {metric}; it has {', '.join(present) or 'none'}"
            )
        return variant
    primary = BY_NAME[metric].variants[:1]
    if primary and primary[0] in present:
        return primary[0]
    if len(present) == 1:
        return present[0]
    raise ServiceError(f"choose a variant of {metric}: the pilot has {', '.join(present) or 'none'}")


def _differences(frame, run_a: str, run_b: str, metric: str, variant: str | None, cutoff: int):
    """``(variant, qids, differences)`` of A − B from a long per-query frame."""
    part = frame[(frame["metric"] == metric) & (frame["cutoff"].astype(int) == int(cutoff))]
    if part.empty:
        raise ServiceError(f"the pilot has no values of {metric}@{cutoff}")
    variant = _variant(metric, variant, sorted(part["variant"].astype(str).unique()))
    part = part[part["variant"] == variant]
    a = part[part["run"] == run_a].set_index("qid")["value"]
    b = part[part["run"] == run_b].set_index("qid")["value"]
    qids, differences = plan_inputs.paired_differences(a, b)
    if len(qids) < 3:
        raise ServiceError(
            f"the pilot has {len(qids)} queries with values of both {run_a} and {run_b} on "
            f"{metric}[{variant}]@{cutoff}; a plan needs at least 3"
        )
    if min(differences) == max(differences):
        raise ServiceError("the pilot's per-query differences do not vary: nothing to plan from")
    return variant, qids, differences


def _has(report: Report, runs: set[str], cutoff: int, metric: str) -> bool:
    names = set(report.runs.values_list("name", flat=True))
    if not runs <= names:
        return False
    if BY_NAME[metric].effectiveness:
        return True  # the measures' cutoffs are theirs, checked when read
    return int(cutoff) in {int(c) for c in report.cutoffs or []}


def find_pilot(
    run_a: str,
    run_b: str,
    metric: str,
    *,
    cutoff: int = DEFAULT_CUTOFF,
    variant: str | None = None,
    query_set: str | None = None,
    report: str | None = None,
    bar: bool = False,
    compute: bool = True,
) -> Pilot:
    """The pilot of a plan: a given report, else the newest report on ``query_set`` with both runs and the cutoff,
    else computed on the fly (bias metrics only, nothing stored) unless ``compute`` is false (a web request: a
    report over a whole query set is a job, not a request's work)."""
    if metric not in BY_NAME:
        raise ServiceError(f"unknown metric {metric!r}; choose one of {', '.join(BY_NAME)}")
    if run_a == run_b:
        raise ServiceError("choose two different runs")
    if int(cutoff) < 1:
        raise ServiceError("the cutoff must be a positive integer")
    runs = [_run(run_a), _run(run_b)]
    chosen: Report | None = None
    if report:
        chosen = Report.objects.select_related("query_set", "baseline").filter(name=report).first()
        if chosen is None:
            raise ServiceError(f"no report named {report!r}")
        if query_set and chosen.query_set.name != query_set:
            raise ServiceError(f"report {report!r} is on query set {chosen.query_set.name!r}, not {query_set!r}")
        missing = [r.name for r in runs if not chosen.runs.filter(pk=r.pk).exists()]
        if missing:
            raise ServiceError(f"report {report!r} does not hold run(s) {', '.join(missing)}")
        source = f"report {chosen.name}"
    else:
        if not query_set:
            raise ServiceError("give the pilot: a report, or the query set whose newest report (or values) to use")
        qs = QuerySet.objects.filter(name=query_set).first()
        if qs is None:
            raise ServiceError(f"no query set named {query_set!r}")
        candidates = (
            Report.objects.select_related("query_set", "baseline")
            .filter(query_set=qs, runs=runs[0])
            .filter(runs=runs[1])
            .order_by("-created", "-pk")
        )
        chosen = next((r for r in candidates if _has(r, {run_a, run_b}, cutoff, metric)), None)
        source = f"the newest report on {qs.name} with both runs, {chosen.name}" if chosen else ""
    if chosen is not None:
        frame = report_per_query(chosen)
        name, qs_name = chosen.name, chosen.query_set.name
    else:
        if BY_NAME[metric].effectiveness:
            raise ServiceError(
                f"no report on {query_set} holds {run_a} and {run_b}: build one with the qrels "
                f"(bias_report --qrels) to plan on {metric}"
            )
        if not compute:
            raise ServiceError(
                f"no stored report on {query_set} holds {run_a} and {run_b} at cutoff {cutoff}: "
                "build one (the report page or bias_report), then plan on it"
            )
        computed = compute_report(qs, runs, ReportSettings(cutoffs=(int(cutoff),), bootstrap_samples=1), bar=bar)
        frame, name, qs_name = computed.per_query, None, qs.name
        source = f"computed on the fly over {qs.name} (no stored report holds both runs at this cutoff)"
    variant, qids, differences = _differences(frame, run_a, run_b, metric, variant, cutoff)
    return Pilot(source, name, qs_name, run_a, run_b, metric, variant, int(cutoff), qids, differences, chosen)

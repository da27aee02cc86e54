"""The same runs on several query sets: each set's ranking of the runs and the agreement between the sets' orders
(Kendall's τ with a bootstrap interval; pure: :mod:`genderbias.stats.run_agreement`).

A set is scored by a stored report, whose per-query values are read, never computed again, so a comparison takes
every setting the reports were built with. A comparison is a Job whose ``result`` holds it: the command computes
inline (:func:`compare_reports`), the page and the API start a job (:func:`start_compare_sets`).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.urls import reverse

from core.errors import FieldError, ServiceError
from core.jobs import background_job
from core.models import Job
from core.natural import natural_sorted
from core.services.names import validate_name
from genderbias.ranking.vocabulary import BY_NAME
from metrics import selectors
from metrics.services.report_settings import ReportSettings
from metrics.services.reports import build_report
from pooling.models import QuerySet, Run

from ..models import Report, Result

#: The bootstrap replicates of a comparison unless told.
DEFAULT_SAMPLES = 1000


def match_systems(reports: Sequence[Report]) -> tuple[list[str], list[list[str]]]:
    """The systems compared and, per report, its run of each system: matched by name when every report has the same
    runs (one set of runs scored on several query sets), else by position in each report's run order (other files
    of the same rankers), a system then named by its runs."""
    orders = [list(r.run_order) or sorted(r.runs.values_list("name", flat=True)) for r in reports]
    if all(set(order) == set(orders[0]) for order in orders):
        return list(orders[0]), [list(orders[0]) for _ in orders]
    if all(len(order) == len(orders[0]) for order in orders):
        systems = [" / ".join(dict.fromkeys(order[k] for order in orders)) for k in range(len(orders[0]))]
        return systems, orders
    sizes = ", ".join(f"{r.name}: {len(o)}" for r, o in zip(reports, orders, strict=True))
    raise FieldError(
        "reports",
        f"the reports rank different runs ({sizes}): give reports of the same runs, or of as many runs in "
        "the same order (each report's n-th run is the same ranker)",
    )


def _variant(reports: Sequence[Report], metric: str, variant: str, cutoff: int) -> str:
    """The variant asked for, or the metric's own (its paper's, else the one the reports have)."""
    stored = list(
        Result.objects.filter(report=reports[0], metric=metric, cutoff=cutoff)
        .values_list("variant", flat=True)
        .distinct()
    )
    if not stored:
        raise FieldError("metric", f"report {reports[0].name!r} has no {metric}@{cutoff}")
    if variant:
        if variant not in stored:
            raise FieldError("variant", f"{metric}@{cutoff} of {reports[0].name!r} has variants {', '.join(stored)}")
        return variant
    primary = [v for v in BY_NAME[metric].variants if v in stored]
    return primary[0] if primary else sorted(stored)[0]


def check_comparison(reports: Sequence[Report], metric: str, variant: str, cutoff: int, samples: int) -> str:
    """Every rule of a comparison, checked once (page, API and command only translate); the variant used."""
    reports = list(dict.fromkeys(reports))
    if len(reports) < 2:
        raise FieldError("reports", "choose at least two reports (one per query set)")
    _check_metric(metric, samples)
    systems, _ = match_systems(reports)
    if len(systems) < 2:
        raise FieldError("reports", "the reports must rank at least two runs")
    variant = _variant(reports, metric, variant, cutoff)
    for report in reports[1:]:
        if not Result.objects.filter(report=report, metric=metric, variant=variant, cutoff=cutoff).exists():
            raise FieldError("metric", f"report {report.name!r} has no {metric}@{cutoff} ({variant})")
    return variant


def _check_metric(metric: str, samples: int) -> None:
    if metric not in BY_NAME:
        raise FieldError("metric", f"unknown metric {metric!r}; choose one of {', '.join(BY_NAME)}")
    if not 1 <= samples <= 100_000:
        raise FieldError("samples", f"bootstrap samples must be between 1 and 100,000, not {samples}")


def _set_values(report: Report, runs: list[str], metric: str, variant: str, cutoff: int):
    from genderbias.stats.run_agreement import SetValues

    frame = selectors.report_per_query(report)
    frame = frame[(frame["metric"] == metric) & (frame["variant"] == variant) & (frame["cutoff"] == cutoff)]
    table = frame.pivot_table(index="qid", columns="run", values="value", aggfunc="first").reindex(columns=runs)
    complete = table.dropna()
    qids = natural_sorted(complete.index.astype(str))
    complete = complete.loc[qids]
    left_out = report.query_set.queries.count() - len(complete)
    return SetValues(report.name, qids, complete.to_numpy(dtype=float), left_out=max(left_out, 0))


def compare_reports(
    reports: Sequence[Report],
    metric: str,
    *,
    variant: str = "",
    cutoff: int = 10,
    samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
) -> dict:
    """Each report's ranking of the runs by ``metric@cutoff`` and Kendall's τ between every two reports' orders with
    a bootstrap interval over queries, plus each report's query set and where it came from."""
    from genderbias.stats.run_agreement import compare_sets

    reports = list(dict.fromkeys(reports))
    variant = check_comparison(reports, metric, variant, cutoff, samples)
    systems, runs = match_systems(reports)
    sets = [_set_values(r, order, metric, variant, cutoff) for r, order in zip(reports, runs, strict=True)]
    try:
        result = compare_sets(sets, systems, metric, samples=samples, seed=seed)
    except ValueError as exc:
        raise ServiceError(str(exc)) from None
    for described, report, order in zip(result["sets"], reports, runs, strict=True):
        described |= {
            "report": report.name,
            "query_set": report.query_set.name,
            "source": report.query_set.dataset_source or None,
            "licence": report.query_set.licence or None,
            "runs_of_systems": dict(zip(systems, order, strict=True)),
        }
    return result | {"variant": variant, "cutoff": cutoff, "reports": [r.name for r in reports]}


@background_job("metrics.compare_sets", task="metrics.tasks.compare_sets_task", failures=(ServiceError,))
def compare_sets_job(
    job: Job,
    report_ids: list[int],
    metric: str,
    variant: str,
    cutoff: int,
    samples: int,
    seed: int,
    build: list | None = None,
    prefix: str = "across",
) -> None:
    """A comparison across sets: ``build`` (``[[query set id, [run ids]], ...]``) makes or reuses a report per set
    first (reused by a redelivery too), then the reports are compared."""
    by_pk = Report.objects.in_bulk(report_ids)
    reports = [by_pk[pk] for pk in report_ids]
    if build:
        query_sets = QuerySet.objects.in_bulk([qs for qs, _ in build])
        runs = Run.objects.in_bulk([r for _, ids in build for r in ids])
        specs = [(query_sets[qs], [runs[r] for r in ids]) for qs, ids in build]
        reports += build_set_reports(specs, prefix, cutoffs=[cutoff])
    result = compare_reports(reports, metric, variant=variant, cutoff=cutoff, samples=samples, seed=seed)
    job.result = {**result, "url": reverse("metrics:sets-detail", args=[job.pk])}
    mean = result["mean_tau"]
    job.message = f"{len(reports)} sets, {len(result['systems'])} runs; mean τ " + (
        f"{mean:.2f}" if mean is not None else "undefined"
    )


def check_set_building(
    reports: Sequence[Report],
    query_sets: Sequence[QuerySet],
    runs: Sequence[Run],
    metric: str,
    cutoff: int,
    samples: int,
    prefix: str,
) -> None:
    """The rules of a comparison whose reports are built first (a report per query set, of ``runs``); the variant
    is checked once the reports exist."""
    if len(reports) + len(query_sets) < 2:
        raise FieldError("query_sets", "choose at least two query sets (or reports) to compare")
    if len(runs) < 2:
        raise FieldError("runs", "choose at least two runs to score on the query sets")
    _check_metric(metric, samples)
    names = [r.name for r in runs]
    for query_set in query_sets:
        name = f"{prefix}-{query_set.name}"[:100]
        try:
            validate_name(name, "report")
        except ServiceError as exc:
            raise FieldError("prefix", str(exc)) from None
        existing = Report.objects.filter(name=name).first()
        if existing is not None and (existing.query_set_id != query_set.pk or list(existing.run_order) != names):
            raise FieldError(
                "prefix", f"a report named {name!r} exists over other queries or runs; choose another prefix"
            )


def start_compare_sets(
    reports: Sequence[Report],
    metric: str,
    *,
    variant: str = "",
    cutoff: int = 10,
    samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    query_sets: Sequence[QuerySet] = (),
    runs: Sequence[Run] = (),
    prefix: str = "across",
) -> Job:
    """Compare the sets in the background once the caller's transaction commits: the reports', and
    those of ``query_sets`` scored with ``runs`` (a report per set built first, or reused)."""
    reports = list(dict.fromkeys(reports))
    query_sets = list(dict.fromkeys(query_sets))
    if query_sets:
        check_set_building(reports, query_sets, runs, metric, cutoff, samples, prefix)
        build = [[qs.pk, [r.pk for r in runs]] for qs in query_sets]
    else:
        variant = check_comparison(reports, metric, variant, cutoff, samples)
        build = None
    names = [r.query_set.name for r in reports] + [qs.name for qs in query_sets]
    description = f"{metric}@{cutoff} across " + ", ".join(names)
    of = reports[0] if reports else query_sets[0]
    return compare_sets_job.start(
        description, [r.pk for r in reports], metric, variant, cutoff, samples, seed, build, prefix, of=of
    )


def build_set_reports(
    sets: Sequence[tuple[QuerySet, Sequence[Run]]], prefix: str, *, cutoffs: Sequence[int] = ()
) -> list[Report]:
    """A report per (query set, runs), named ``<prefix>-<query set>``, with the default settings (and ``cutoffs``
    when given); a report of that name over the same query set and runs is reused."""
    settings = ReportSettings(cutoffs=tuple(sorted(set(cutoffs)))) if cutoffs else ReportSettings()
    reports = []
    for query_set, runs in sets:
        name = f"{prefix}-{query_set.name}"[:100]
        existing = Report.objects.filter(name=name).first()
        if existing is not None:
            same = existing.query_set_id == query_set.pk and list(existing.run_order) == [r.name for r in runs]
            if not same:
                raise ServiceError(
                    f"a report named {name!r} exists over other queries or runs; choose another --prefix"
                )
            reports.append(existing)
            continue
        reports.append(build_report(name, query_set, list(runs), settings))
    return reports

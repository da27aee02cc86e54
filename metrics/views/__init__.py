"""Pages of the metrics app's reports: thin shells over services and plots (the studies beside them:
:mod:`metrics.views.studies`; the home page: :mod:`metrics.views.home`)."""

from __future__ import annotations

import math
from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation import selectors as annotation_selectors
from core.errors import ServiceError, StateError
from core.figure_notes import figure_notes
from core.jobs import TooManyJobs
from core.templatetags.roles import may_act
from core.web.permissions import researcher_required
from genderbias.numbers import parse_count
from genderbias.ranking.defaults import MAX_CUTOFF, TABLE_LAYOUTS
from metrics.services.plot_cache import PlotParameterError, cached_plot, drawn_plot, plot_key, png_size
from metrics.svg_markup import inline

from .. import selectors, services
from ..forms import ReportForm
from ..models import Report


def _cutoff(value: str | int) -> int:
    """A cutoff of a link's parameters; a ``ValueError`` names it, which the views turn into a message or a 404."""
    return parse_count(value, "cutoff", minimum=1, maximum=MAX_CUTOFF)


@researcher_required
def report_list(request: HttpRequest) -> HttpResponse:
    reports = Report.objects.select_related("query_set").prefetch_related("runs")
    return render(request, "metrics/report_list.html", {"reports": reports, "form": ReportForm()})


@researcher_required
def report_detail(request: HttpRequest, name: str) -> HttpResponse:
    """The report for people: results in long form (``?metric=`` filters), a plot per metric, the
    fairness–effectiveness plot (``?x=&y=``) with measures, and a paper's table (``?layout=``)."""
    from .. import formatting

    report = get_object_or_404(
        Report.objects.select_related("query_set", "wordlist", "representative_wordlist", "baseline"), name=name
    )
    summary = selectors.report_summary(report)
    metrics = list(dict.fromkeys(summary["metric"]))
    metric = request.GET.get("metric", "")
    shown = summary[summary["metric"] == metric] if metric in metrics else summary
    lookup = {(r.run, r.metric, r.variant, r.cutoff): _cell(r) for r in shown.itertuples(index=False)}
    cutoffs = sorted({int(c) for c in shown["cutoff"]})
    runs = list(dict.fromkeys(summary["run"]))
    groups = []
    for group_metric, variant in dict.fromkeys((m, v) for m, v, _ in formatting.columns_of(shown)):
        rows = []
        for run in runs:
            cells = [lookup.get((run, group_metric, variant, c)) for c in cutoffs]
            if any(cells):
                rows.append({"run": run, "cells": cells, "queries": next(c["queries"] for c in cells if c)})
        plot = urlencode({"metric": group_metric, "variant": variant})
        svg = _drawn_svg(
            report, "metric", {"metric": group_metric, "variant": variant},
            f"{group_metric} [{variant}] of every run against the cutoff, with 95% confidence intervals "
            "(values in the results table)",
        )  # fmt: skip
        groups.append({"metric": group_metric, "variant": variant, "rows": rows, "plot": plot, "svg": svg})
    context = {
        "report": report,
        "groups": groups,
        "cutoffs": cutoffs,
        "report_cutoffs": report.cutoffs,
        "metrics": metrics,
        "metric": metric if metric in metrics else "",
        "runs": runs,
        "unreturned": [{"run": run, "qids": qids} for run, qids in (report.unreturned or {}).items() if qids],
        "old_convention": report.qrels_id is not None and report.unreturned is None,
        "significance": selectors.report_policy_text(report),
        "ties": formatting.tie_lines(report.tied_queries, summary, ranges=False),
        "undecided_signs": sum(figure_notes(r).sign_undecided for r in summary.itertuples(index=False)),
        # The per-query distribution PNG's size when drawn, so the browser lays it out once.
        "distribution_size": png_size(report, "distribution", {"cutoff": str(report.cutoffs[-1])})
        if report.cutoffs
        else None,
        "method_changes": selectors.method_changes(report),
        "rebuilt_reports": selectors.rebuilt_reports(report),
    }
    context |= _tradeoff_context(request, report, summary)
    context |= _table_context(request, report, runs)
    context |= _uncertainty_context(request, report, summary)
    state = {key: request.GET.get(key, "") for key in ("metric", "x", "y", "layout", "cutoff", "baseline", "lcutoff")}
    context["keep"] = {
        form: {key: value for key, value in state.items() if value and key not in fields}
        for form, fields in (
            ("filter", {"metric"}),
            ("tradeoff", {"x", "y"}),
            ("table", {"layout", "cutoff", "baseline"}),
            ("labels", {"lcutoff"}),
        )
    }
    return render(request, "metrics/report_detail.html", context)


def _drawn_svg(report: Report, kind: str, params: dict, label: str, element_id: str = "") -> str | None:
    """A figure some worker already drew, as markup for the page: a browser then builds it with the page and asks
    for nothing more (docs/benchmarks-history.md). ``None`` if never drawn: the page shows an image, whose request
    draws it."""
    from django.utils.safestring import mark_safe

    drawn = drawn_plot(report, kind, params, "svg")
    if drawn is None:
        return None
    data, key = drawn
    try:
        svg = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "<svg" not in svg or not svg.rstrip().endswith("</svg>"):
        return None  # not a whole figure (a damaged file): an image, as if never drawn
    return mark_safe(inline(svg, f"f{key[:8]}-", label, element_id=element_id))


def _number(value):
    """A figure as the page shows it: undefined (NaN) as None."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def _cell(row) -> dict:
    notes = figure_notes(row)
    return {
        "value": _number(row.value),
        "queries": row.queries,
        "ci_low": _number(row.ci_low),
        "ci_high": _number(row.ci_high),
        "p_value": _number(row.p_value),
        "tie_low": notes.tie_low,
        "tie_high": notes.tie_high,
        "tie_sign_undecided": notes.sign_undecided,
    }


def _uncertainty_context(request: HttpRequest, report: Report, summary) -> dict:
    """A report on a batch's labels: its figures with the labels' uncertainty at one cutoff
    (``?lcutoff=``, default 10 or the largest), and whether the batch's answers moved since."""
    if not report.on_batch:
        return {}
    try:
        cutoff = _cutoff(request.GET.get("lcutoff") or (10 if 10 in report.cutoffs else max(report.cutoffs)))
    except ValueError:
        cutoff = max(report.cutoffs)
    rows = summary[summary["cutoff"] == cutoff]
    groups = []
    for (metric, variant), part in rows.groupby(["metric", "variant"], sort=False):
        cells = [_uncertainty_cell(r) for r in part.itertuples(index=False)]
        for cell in cells:
            if report.baseline_id and cell["run"] != report.baseline.name:
                cell["why"] = "?" + urlencode(
                    {"run": cell["run"], "metric": metric, "variant": variant, "cutoff": cutoff}
                )
        plot = urlencode({"metric": metric, "variant": variant, "cutoff": cutoff})
        svg = _drawn_svg(
            report, "labels", {"metric": metric, "variant": variant, "cutoff": str(cutoff)},
            f"{metric}@{cutoff} [{variant}]: each run's value with its query-only interval and the corrected value "
            "with the interval that carries the labels' uncertainty (values in the table above)",
        )  # fmt: skip
        groups.append({"metric": metric, "variant": variant, "rows": cells, "plot": plot, "svg": svg})
    batch = report.label_batch
    return {
        "uncertainty": {
            "cutoff": cutoff,
            "cutoffs": report.cutoffs,
            "groups": groups,
            "batch": batch.name,
            "stale": report.answers_version != annotation_selectors.answers_version(batch),
            "calibrated": report.labels_calibrated,
            "quality": report.figure_quality,
            "interval": selectors.report_interval(report),
            "label_interval": report.label_interval,
        }
    }


def _uncertainty_cell(row) -> dict:
    fields = [
        "value", "ci_low", "ci_high", "corrected", "combined_low", "combined_high", "label_share",
        "difference_low", "difference_high", "difference_corrected", "difference_combined_low",
        "difference_combined_high", "difference_label_share", "p_value", "query_p_value", "queries",
    ]  # fmt: skip
    cell = {field: _number(getattr(row, field)) for field in fields}
    cell["run"] = row.run
    for share in ("label_share", "difference_label_share"):
        cell[f"{share}_percent"] = None if cell[share] is None else round(100 * cell[share])
    return cell


def _tradeoff_context(request: HttpRequest, report: Report, summary) -> dict:
    """The fairness–effectiveness plot's choices: x among the effectiveness measures, y among the
    fairness metrics (default nDCG, or the first measure, against NFaiRR at the same cutoff)."""
    axes = selectors.tradeoff_axes(summary, request.GET.get("x"), request.GET.get("y"))
    if axes is None:
        return {}
    x, y, effect, fair = axes["x"], axes["y"], axes["effect"], axes["fair"]
    title = f"{y[0]}@{y[2]} against {x[0]}@{x[2]}"
    svg = _drawn_svg(
        report, "tradeoff", {"x": selectors.key_name(x), "y": selectors.key_name(y)},
        f"{title}: each run a point with its 95% confidence intervals (values in the results table)", "tradeoff-plot",
    )  # fmt: skip
    return {
        "tradeoff": {
            "x": selectors.key_name(x),
            "y": selectors.key_name(y),
            "x_choices": [selectors.key_name(k) for k in effect],
            "y_choices": [selectors.key_name(k) for k in fair],
            "query": urlencode({"x": selectors.key_name(x), "y": selectors.key_name(y)}),
            "title": title,
            "svg": svg,
        }
    }


def _table_context(request: HttpRequest, report: Report, runs: list[str]) -> dict:
    """A paper's table when ``?layout=`` asks for one (``&cutoff=&baseline=``); the baseline is the report's unless
    another of its runs is chosen."""
    baseline = request.GET.get("baseline", "").strip() or None
    chosen = baseline or (report.baseline.name if report.baseline_id else "")
    context = {"layouts": TABLE_LAYOUTS, "layout": "", "table": None, "table_error": "", "table_baseline": chosen}
    layout = request.GET.get("layout", "")
    if layout not in TABLE_LAYOUTS:
        return context
    context["layout"] = layout
    try:
        cutoff = _cutoff(request.GET["cutoff"]) if request.GET.get("cutoff", "").strip() else None
        context["table"] = selectors.report_table(report, layout, cutoff=cutoff, baseline=baseline)
    except ValueError:
        context["table_error"] = "the cutoff must be an integer"
    except ServiceError as exc:
        context["table_error"] = str(exc)
    return context


@researcher_required
def report_csv(request: HttpRequest, name: str) -> HttpResponse:
    from .. import formatting

    report = get_object_or_404(Report, name=name)
    response = HttpResponse(
        formatting.results_csv(
            selectors.report_summary(report), report.ties, report.figure_quality, report.interval_sentence
        ),
        content_type="text/csv; charset=utf-8",
    )
    response["Content-Disposition"] = f'attachment; filename="{report.name}.csv"'
    return response


@researcher_required
def report_per_query_csv(request: HttpRequest, name: str) -> HttpResponse:
    """The report's per-query CSV: a file once a job wrote it, never written in the request (it grows with the batch)."""
    from django.http import FileResponse

    report = get_object_or_404(Report, name=name)
    path = services.cached_per_query_csv(report)
    if path is not None:
        response = FileResponse(path.open("rb"), as_attachment=True, filename=f"{report.name}-per-query.csv")
        response["Content-Type"] = "text/csv; charset=utf-8"
        return response
    try:
        job = services.start_per_query_csv(report, may_start=may_act(request.user, report))
    except TooManyJobs as exc:
        return HttpResponse(str(exc), status=429, content_type="text/plain; charset=utf-8")
    except StateError as exc:  # a viewer, and no job under way
        return HttpResponse(str(exc), status=409, content_type="text/plain; charset=utf-8")
    except ServiceError as exc:
        raise Http404(str(exc)) from None
    return redirect("core:job-detail", pk=job.pk)


#: How long a browser keeps a plot before asking again (with its ETag: usually a 304).
PLOT_MAX_AGE = 24 * 3600
#: The parameters each figure reads: the only ones in its cache key, so an invented parameter never draws another file.
PLOT_PARAMETERS = {
    "cutoffs": (),
    "distribution": ("cutoff",),
    "metric": ("metric", "variant"),
    "tradeoff": ("x", "y"),
    "labels": ("metric", "variant", "cutoff"),
}


def _plot_response(request: HttpRequest, report: Report, kind: str, suffix: str, draw) -> HttpResponse:
    """A report's figure from the plot cache: drawn on the first request, then a file with an ETag and a max-age."""
    from django.http import HttpResponseNotModified
    from django.utils.cache import patch_cache_control

    params = {key: request.GET[key].strip() for key in PLOT_PARAMETERS.get(kind, ()) if key in request.GET}
    try:
        etag = f'"{plot_key(report, kind, params)}"'  # parameters as values: one figure for 10 and 010
    except PlotParameterError as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    if etag in [tag.strip() for tag in request.headers.get("If-None-Match", "").split(",")]:
        response = HttpResponseNotModified()
    else:
        path, _ = cached_plot(report, kind, params, suffix, draw)
        content_type = "image/svg+xml" if suffix == "svg" else "image/png"
        response = HttpResponse(path.read_bytes(), content_type=content_type)  # tens of kB: read whole
        if request.GET.get("download"):
            response["Content-Disposition"] = f'attachment; filename="{report.name}-{kind}.{suffix}"'
    response["ETag"] = etag
    patch_cache_control(response, private=True, max_age=PLOT_MAX_AGE)
    return response


@researcher_required
def report_plot(request: HttpRequest, name: str, kind: str) -> HttpResponse:
    """``cutoffs``: every metric against the cutoff; ``distribution``: per-query box plots at ``?cutoff=``."""
    from .. import plots

    report = get_object_or_404(Report, name=name)

    def draw() -> bytes:
        if kind == "cutoffs":
            return plots.cutoff_figure(selectors.report_summary(report))
        if kind == "distribution":
            try:
                cutoff = _cutoff(request.GET.get("cutoff", max(report.cutoffs)))
                per_query = selectors.report_per_query(report)
            except (ValueError, ServiceError) as exc:
                raise Http404(str(exc)) from None
            if cutoff not in report.cutoffs:
                raise Http404(f"the report has no cutoff {cutoff}")
            return plots.distribution_figure(per_query, cutoff)
        raise Http404("plots: cutoffs, distribution")

    return _plot_response(request, report, kind, "png", draw)


@researcher_required
def report_svg(request: HttpRequest, name: str, kind: str) -> HttpResponse:
    """``metric``: one metric (``?metric=&variant=``) against the cutoff; ``tradeoff``: fairness (``?y=``) against
    effectiveness (``?x=``), keys ``metric:variant@cutoff``; ``labels``: both intervals of one metric of a report on
    a batch's labels (``?metric=&variant=&cutoff=``)."""
    from .. import plots

    report = get_object_or_404(Report, name=name)

    def draw() -> bytes:
        summary = selectors.report_summary(report)
        keys = {
            selectors.key_name(k): k for k in zip(summary["metric"], summary["variant"], summary["cutoff"], strict=True)
        }
        if kind == "metric":
            metric, variant = request.GET.get("metric", ""), request.GET.get("variant", "")
            if not ((summary["metric"] == metric) & (summary["variant"] == variant)).any():
                raise Http404(f"the report has no metric {metric} [{variant}]")
            return plots.metric_figure(summary, metric, variant)
        if kind == "tradeoff":
            x, y = keys.get(request.GET.get("x", "")), keys.get(request.GET.get("y", ""))
            if x is None or y is None:
                raise Http404("give x and y, each a metric:variant@cutoff of the report")
            return plots.tradeoff_figure(summary, x, y)
        if kind == "labels":
            if not report.on_batch:
                raise Http404("the report is not on a batch's labels")
            metric, variant = request.GET.get("metric", ""), request.GET.get("variant", "")
            try:
                cutoff = _cutoff(request.GET.get("cutoff", ""))
            except ValueError:
                raise Http404("give the cutoff") from None
            chosen = summary[
                (summary["metric"] == metric) & (summary["variant"] == variant) & (summary["cutoff"] == cutoff)
            ]
            if chosen.empty:
                raise Http404(f"the report has no {metric} [{variant}] at cutoff {cutoff}")
            return plots.label_interval_figure(chosen, interval=report.interval_sentence)
        raise Http404("SVG plots: metric, tradeoff, labels")

    return _plot_response(request, report, kind, "svg", draw)


@researcher_required
def report_contributions(request: HttpRequest, name: str) -> HttpResponse:
    """What moves a run's difference against the baseline (``?run=&metric=&variant=&cutoff=``) in a report on a
    batch's labels: the queries whose labels are least certain and matter most, each linked to its review."""
    report = get_object_or_404(Report.objects.select_related("baseline", "label_batch"), name=name)
    if not report.on_batch:
        raise Http404("the report is not on a batch's labels")
    try:
        cutoff = _cutoff(request.GET.get("cutoff", ""))
        found = selectors.report_contributions(
            report, request.GET.get("run", ""), request.GET.get("metric", ""), request.GET.get("variant", ""), cutoff
        )
    except ValueError:
        raise Http404("give the cutoff") from None
    except ServiceError as exc:
        raise Http404(str(exc)) from None
    review = reverse("annotation:batch-review", args=[report.label_batch.name])
    for row in found["rows"]:
        row["review"] = f"{review}?{urlencode({'qid': row['qid']})}"
        row["percent"] = round(100 * row["probability"])
    return render(request, "metrics/report_contributions.html", {"report": report, "found": found})


@researcher_required
@require_POST
def report_rebuild(request: HttpRequest, name: str) -> HttpResponse:
    """Build the report again with today's methods and its own settings (a new report), then follow its job."""
    report = get_object_or_404(Report, name=name)
    try:
        job = services.start_rebuild(report)
    except ServiceError as exc:
        return HttpResponseBadRequest(str(exc))
    return redirect("core:job-detail", pk=job.pk)


@researcher_required
@require_POST
def report_create(request: HttpRequest) -> HttpResponse:
    """Build a report as a Celery task (inline without a broker), then follow its job."""
    form = ReportForm(request.POST)
    if not form.is_valid():
        reports = Report.objects.select_related("query_set").prefetch_related("runs")
        return render(request, "metrics/report_list.html", {"reports": reports, "form": form}, status=400)
    return redirect("core:job-detail", pk=form.start().pk)

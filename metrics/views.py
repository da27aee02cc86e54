"""Pages of the metrics app: thin shells over services and plots.

The home page (the dashboard: ``home``, ``home_live``) is here too: what the researcher's path stands at."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from annotation import selectors as annotation_selectors
from annotation.models import Batch
from core.errors import ServiceError, StateError
from core.figure_notes import figure_notes
from core.jobs import TooManyJobs
from core.models import Job
from core.selectors import jobs_for, unacknowledged_changes
from core.spreadsheet import csv_text
from core.templatetags.roles import may_act
from core.web.paging import table_page
from core.web.permissions import researcher_required
from genderbias.numbers import parse_count
from genderbias.ranking.defaults import MAX_CUTOFF, TABLE_LAYOUTS
from metrics.services.plot_cache import PlotParameterError, cached_plot, drawn_plot, plot_key, png_size
from metrics.svg_markup import inline
from pooling import selectors as pooling_selectors
from pooling.models import Qrels

from . import selectors, services
from .forms import (
    CompareSetsForm,
    CounterfactualForm,
    CrboForm,
    LabelSensitivityForm,
    PlanForm,
    PreferenceForm,
    ReportForm,
)
from .models import LabelSensitivityResult, Report


def _cutoff(value: str | int) -> int:
    """A cutoff of a link's parameters (:func:`genderbias.numbers.parse_count`); a ``ValueError`` (its
    ``NumberError``) names it, which the views turn into their message or a 404."""

    return parse_count(value, "cutoff", minimum=1, maximum=MAX_CUTOFF)


@researcher_required
def report_list(request: HttpRequest) -> HttpResponse:
    reports = Report.objects.select_related("query_set").prefetch_related("runs")
    return render(request, "metrics/report_list.html", {"reports": reports, "form": ReportForm()})


@researcher_required
def report_detail(request: HttpRequest, name: str) -> HttpResponse:
    """The report for people: results in long form (``?metric=`` filters), a plot per metric, the
    fairness–effectiveness plot (``?x=&y=``) with measures, and a paper's table (``?layout=``)."""
    from urllib.parse import urlencode

    from . import formatting

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
        "distribution_size": _distribution_size(report),
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
    """A figure some worker already drew, as markup for the page (``None`` if never drawn: the page
    then shows it as an image, whose request draws it). Inline, a browser builds it with the page
    and asks for nothing more: in Chromium, a new researcher's report page fully loaded in about
    half the time of twelve image requests (docs/benchmarks.md). The figure stays a file with an
    ETag too, for its link."""
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


def _distribution_size(report: Report) -> tuple[int, int] | None:
    """The page's per-query distribution PNG's size when drawn, so the browser lays it out once."""

    return png_size(report, "distribution", {"cutoff": str(report.cutoffs[-1])}) if report.cutoffs else None


def _cell(row) -> dict:
    """A result as the page shows it: undefined figures (NaN) as None."""
    import math

    def number(value):
        return None if value is None or (isinstance(value, float) and math.isnan(value)) else value

    notes = figure_notes(row)
    return {
        "value": number(row.value),
        "queries": row.queries,
        "ci_low": number(row.ci_low),
        "ci_high": number(row.ci_high),
        "p_value": number(row.p_value),
        "tie_low": notes.tie_low,
        "tie_high": notes.tie_high,
        "tie_sign_undecided": notes.sign_undecided,
    }


def _uncertainty_context(request: HttpRequest, report: Report, summary) -> dict:
    """A report on a batch's labels: its figures with the labels' uncertainty at one cutoff
    (``?lcutoff=``, default 10 or the largest), and whether the batch's answers moved since."""
    from urllib.parse import urlencode

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
    import math

    def number(value):
        return None if value is None or (isinstance(value, float) and math.isnan(value)) else value

    fields = [
        "value", "ci_low", "ci_high", "corrected", "combined_low", "combined_high", "label_share",
        "difference_low", "difference_high", "difference_corrected", "difference_combined_low",
        "difference_combined_high", "difference_label_share", "p_value", "query_p_value", "queries",
    ]  # fmt: skip
    cell = {field: number(getattr(row, field)) for field in fields}
    cell["run"] = row.run
    for share in ("label_share", "difference_label_share"):
        cell[f"{share}_percent"] = None if cell[share] is None else round(100 * cell[share])
    return cell


def _tradeoff_context(request: HttpRequest, report: Report, summary) -> dict:
    """The fairness–effectiveness plot's choices: x among the effectiveness measures, y among the
    fairness metrics (default nDCG, or the first measure, against NFaiRR at the same cutoff)."""
    from urllib.parse import urlencode

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
    """A paper's table when ``?layout=`` asks for one (``&cutoff=&baseline=``)."""

    # The baseline selector's default is the report's baseline (an empty value means it too), so
    # the table's marks are the report's; any run of the report may be chosen instead.
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
    from . import formatting

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
    """The report's per-query CSV: a file once a job wrote it (:mod:`metrics.services.per_query_file`;
    the job's page links it when it is done), never written in the request (it grows with the batch)."""
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
#: The parameters each figure reads: the only ones in its cache key (any other is ignored, so an
#: invented parameter never draws and stores another file). An unknown kind keys on nothing.
PLOT_PARAMETERS = {
    "cutoffs": (),
    "distribution": ("cutoff",),
    "metric": ("metric", "variant"),
    "tradeoff": ("x", "y"),
    "labels": ("metric", "variant", "cutoff"),
}


def _plot_response(request: HttpRequest, report: Report, kind: str, suffix: str, draw) -> HttpResponse:
    """A report's figure from the plot cache (:mod:`metrics.services.plot_cache`): drawn on the
    first request by any worker, then served as a file with an ETag and a private max-age."""
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
    from . import plots

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
    """``metric``: one metric (``?metric=&variant=``) against the cutoff; ``tradeoff``: fairness
    (``?y=``) against effectiveness (``?x=``), keys as ``metric:variant@cutoff``; ``labels``: a report
    on a batch's labels, both intervals of one metric (``?metric=&variant=&cutoff=``). SVG that
    follows dark mode."""
    from . import plots

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
    """What moves a run's difference against the baseline (``?run=&metric=&variant=&cutoff=``) in a
    report on a batch's labels: the queries whose labels are least certain and matter most,
    each linked to the batch's review queue."""
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


@researcher_required
def label_sensitivity(request: HttpRequest) -> HttpResponse:
    """How the aggregation and the handling of disputed queries move the runs' bias.

    POST asks for it (:meth:`LabelSensitivityForm.ask`): a result kept for the same settings opens
    at once, otherwise the page follows the job computing it (which links to the result when done);
    past the bound on jobs in flight the form says so (429). ``?result=<id>`` shows a kept result
    with its plot (``&cutoff=`` picks the plot's cutoff), or follows its job while it runs.
    """
    if request.method == "POST":
        form = LabelSensitivityForm(request.POST)
        if not form.is_valid():
            return render(request, "metrics/label_sensitivity.html", {"form": form}, status=400)
        try:
            kept = form.ask(may_start=may_act(request.user, form.cleaned_data["batch"]))
        except ServiceError as exc:
            form.add_error(None, str(exc))
            status = 429 if isinstance(exc, TooManyJobs) else 400
            return render(request, "metrics/label_sensitivity.html", {"form": form}, status=status)
        if kept.result is None:
            return redirect("core:job-detail", pk=kept.job.pk)
        return redirect(f"{reverse('metrics:label-sensitivity')}?result={kept.pk}")
    initial = {key: request.GET.getlist(key) if key == "runs" else request.GET[key] for key in request.GET}
    initial.pop("result", None)
    initial.pop("cutoff", None)
    context: dict = {"form": LabelSensitivityForm(initial=initial or None)}
    if "result" in request.GET:
        try:
            kept = get_object_or_404(
                LabelSensitivityResult.objects.select_related("job"), pk=int(request.GET["result"])
            )
        except ValueError:
            raise Http404("result must be an integer") from None
        if kept.result is None:
            if kept.job is None:
                raise Http404("this result was never computed; ask for it again")
            return redirect("core:job-detail", pk=kept.job.pk)
        context |= _sensitivity_result_context(kept, request.GET.get("cutoff"))
    return render(request, "metrics/label_sensitivity.html", context)


def _sensitivity_result_context(kept: LabelSensitivityResult, cutoff: str | None) -> dict:
    """What the page shows of a kept label-sensitivity result: the result, the rankings that
    change, the set sizes and the plot at ``cutoff`` (default the largest; 404 if not one of them)."""
    import base64

    import pandas as pd

    from . import study_figures

    result = kept.result
    table = pd.DataFrame(result["rows"]).astype({"value": float, "ci_low": float, "ci_high": float})
    try:
        plot_cutoff = int(cutoff if cutoff is not None else max(result["cutoffs"]))
    except ValueError:
        raise Http404("cutoff must be an integer") from None
    if plot_cutoff not in result["cutoffs"]:
        raise Http404(f"the result has no cutoff {plot_cutoff}")
    return {
        "kept": kept,
        "result": result,
        "changed": [r for r in result["rankings"] if r["swapped"]],
        "set_sizes": [{"configuration": key, "size": size} for key, size in result["set_sizes"].items()],
        "plot_cutoff": plot_cutoff,
        "plot": base64.b64encode(study_figures.sensitivity_figure(table, plot_cutoff)).decode("ascii"),
    }


def _swap_page(request: HttpRequest, form_class, kind: str, template: str, **extra) -> HttpResponse:
    """The form of a gender-swap measure and the measurements made so far; a valid POST
    starts one as a job and follows it."""
    form = form_class(request.POST or None)
    if request.method == "POST" and form.is_valid():
        return redirect("core:job-detail", pk=form.start().pk)
    jobs = Job.objects.filter(kind=kind).order_by("-created")[:50]
    status = 400 if request.method == "POST" else 200
    return render(request, template, {"form": form, "jobs": jobs, **extra}, status=status)


def _measurement(kind: str, pk: int) -> Job:
    """A finished measurement of ``kind`` (404 for another kind, or one not done yet)."""
    return get_object_or_404(Job, pk=pk, kind=kind, status=Job.Status.DONE)


@researcher_required
def crbo_list(request: HttpRequest) -> HttpResponse:
    return _swap_page(request, CrboForm, services.crbo_job.kind, "metrics/crbo_list.html", **_counterfactual_context())


def _counterfactual_context(form: CounterfactualForm | None = None) -> dict:
    jobs = Job.objects.filter(kind=services.counterfactual_job.kind).order_by("-created")[:20]
    return {"counterfactual_form": form or CounterfactualForm(), "counterfactual_jobs": jobs}


@researcher_required
@require_POST
def counterfactual_create(request: HttpRequest) -> HttpResponse:
    """Write a counterfactual collection as a job (the CRBO page's second form)."""
    form = CounterfactualForm(request.POST)
    if form.is_valid():
        return redirect("core:job-detail", pk=form.start().pk)
    jobs = Job.objects.filter(kind=services.crbo_job.kind).order_by("-created")[:50]
    context = {"form": CrboForm(), "jobs": jobs, **_counterfactual_context(form)}
    return render(request, "metrics/crbo_list.html", context, status=400)


@researcher_required
def crbo_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = _measurement(services.crbo_job.kind, pk)
    table = table_page(request, job.result["per_query"], lambda row: row[0])
    # Each query's text beside its id (issue 45), read for the rows of this page only.
    runs = [job.result["run"], job.result["counterfactual_run"]]
    texts = pooling_selectors.run_query_texts(runs, [qid for qid, _ in table.rows])
    rows = [(qid, texts.get(qid, ""), value) for qid, value in table.rows]
    context = {"job": job, "result": job.result, "table": table, "rows": rows}
    return render(request, "metrics/crbo_detail.html", context)


@researcher_required
def crbo_plot(request: HttpRequest, pk: int) -> HttpResponse:
    from . import study_figures

    job = _measurement(services.crbo_job.kind, pk)
    png = study_figures.crbo_figure([value for _, value in job.result["per_query"]], job.result["depth"])
    return HttpResponse(png, content_type="image/png")


@researcher_required
def crbo_csv(request: HttpRequest, pk: int) -> HttpResponse:

    job = _measurement(services.crbo_job.kind, pk)
    response = HttpResponse(csv_text(["qid", "rbo"], job.result["per_query"]), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="crbo-{job.pk}.csv"'
    return response


@researcher_required
def preference_list(request: HttpRequest) -> HttpResponse:
    return _swap_page(request, PreferenceForm, services.preference_job.kind, "metrics/preference_list.html")


@researcher_required
def preference_detail(request: HttpRequest, pk: int) -> HttpResponse:
    job = _measurement(services.preference_job.kind, pk)
    return render(request, "metrics/preference_detail.html", {"job": job, "result": job.result})


@researcher_required
def preference_plot(request: HttpRequest, pk: int) -> HttpResponse:
    from . import study_figures

    job = _measurement(services.preference_job.kind, pk)
    fractions = {version: won["fraction"] for version, won in job.result["wins"].items()}
    return HttpResponse(study_figures.preference_figure(fractions), content_type="image/png")


#: Batches and jobs the dashboard shows; the pages of each app list them all.
BATCHES_SHOWN = 8
#: Finished jobs stay on the dashboard this long, so a job that ends while one watches is seen to end.
FINISHED_SHOWN_FOR = timedelta(hours=1)
FINISHED_SHOWN = 5


def _live(user) -> dict:

    jobs = jobs_for(user)  # a connection's test: its managers only
    active = list(jobs.filter(status__in=[Job.Status.PENDING, Job.Status.RUNNING]).order_by("created", "pk"))
    finished = list(
        jobs.filter(
            status__in=[Job.Status.DONE, Job.Status.FAILED], updated__gte=timezone.now() - FINISHED_SHOWN_FOR
        ).order_by("-updated", "-pk")[:FINISHED_SHOWN]
    )
    for job in (*active, *finished):
        fraction = job.fraction if job.fraction is not None else (1.0 if job.status == Job.Status.DONE else 0.0)
        job.percent = round(100 * fraction)
    batches = annotation_selectors.batch_overview(limit=BATCHES_SHOWN)
    # The platforms' panels (annotation.crowd.panels): Prolific's high-return-rate warnings.
    return annotation_selectors.dashboard_panels(("return_rate_warnings",)) | {
        "active_jobs": active,
        "finished_jobs": finished,
        "batch_rows": batches,
        "more_batches": Batch.objects.count() > len(batches),
        "live": bool(active) or any(row["batch"].status == Batch.Status.PUBLISHED for row in batches),
    }


def home(request: HttpRequest) -> HttpResponse:
    """Researchers get the dashboard and the overview; annotators and visitors a page pointing to their work.

    Pools, query sets and reports reveal the crowd's labels and the rankers' lists, so
    everything but the annotation pages is for staff (researchers) only.
    """
    if not request.user.is_staff:
        return render(request, "welcome.html")
    context = (
        pooling_selectors.overview()
        | _live(request.user)
        | {"reports": selectors.recent_reports(), "qrels": Qrels.objects.select_related("collection", "query_set")}
        | {"changes": unacknowledged_changes(request.user)}
    )
    return render(request, "home.html", context)


@researcher_required
def home_live(request: HttpRequest) -> HttpResponse:
    """The dashboard's live part: running jobs and batches (htmx polls it)."""
    return render(request, "metrics/_dashboard_live.html", _live(request.user))


#: The batch form's fields the panel reads (through ``hx-include``): the pool and what a query costs.
BATCH_FIELDS = ("pool", "reward", "assignments_per_query", "queries_per_hit")
#: The panel's fields are prefixed: the batch form beside it has fields of the same names.
PREFIX = "plan"


@researcher_required
@require_GET
def plan_panel(request: HttpRequest) -> HttpResponse:
    """The panel: its form, and once asked (``delta`` given) the plan in one sentence (or why not)."""
    asked = bool(request.GET.get(f"{PREFIX}-delta", "").strip())
    data = request.GET.copy()
    for name in BATCH_FIELDS:  # the batch form's own fields, unprefixed
        if request.GET.get(name):
            data[f"{PREFIX}-{name}"] = request.GET[name]
    form = PlanForm(data if asked else None, prefix=PREFIX)
    plan = form.try_plan() if asked and form.is_valid() else None
    provider = request.GET.get("provider") or "local"
    cost = None
    if plan and plan.get("cost"):
        cost = plan["cost"].get(provider)
    return render(
        request,
        "metrics/_plan_panel.html",
        {"form": form, "plan": plan, "provider": provider, "cost": cost, "asked": asked},
    )


@researcher_required
def sets_list(request: HttpRequest) -> HttpResponse:
    """The same runs on several query sets: the comparisons made so far and the form to make one."""
    return _swap_page(request, CompareSetsForm, services.compare_sets_job.kind, "metrics/sets_list.html")


@researcher_required
def sets_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """Each set's ranking of the runs, side by side, and the agreement between every two sets."""
    job = _measurement(services.compare_sets_job.kind, pk)
    result = job.result
    rows = []
    for rank in range(len(result["systems"])):
        cells = []
        for described in result["sets"]:
            system = described["order"][rank]
            run = next(r for r in described["runs"] if r["system"] == system)
            cells.append({"system": system, "mean": run["mean"], "ci": run["ci"]})
        rows.append({"rank": rank + 1, "cells": cells})
    names = [s["name"] for s in result["sets"]]
    by_pair = {(p["a"], p["b"]): p for p in result["pairs"]} | {(p["b"], p["a"]): p for p in result["pairs"]}
    matrix = [{"name": a, "cells": [None if a == b else by_pair[(a, b)] for b in names]} for a in names]
    context = {"job": job, "result": result, "rows": rows, "matrix": matrix, "names": names}
    return render(request, "metrics/sets_detail.html", context)

"""Pages of the metrics app: thin shells over services and plots."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from core.errors import ServiceError
from core.permissions import researcher_required

from . import selectors
from .forms import ReportForm
from .models import Report


@researcher_required
def report_list(request: HttpRequest) -> HttpResponse:
    reports = Report.objects.select_related("query_set").prefetch_related("runs")
    return render(request, "metrics/report_list.html", {"reports": reports, "form": ReportForm()})


@researcher_required
def report_detail(request: HttpRequest, name: str) -> HttpResponse:
    from . import formatting

    report = get_object_or_404(
        Report.objects.select_related("query_set", "wordlist", "representative_wordlist"), name=name
    )
    summary = selectors.report_summary(report)
    columns = formatting.columns_of(summary)
    lookup = {(r.run, r.metric, r.variant, r.cutoff): r for r in summary.itertuples(index=False)}
    rows = [
        {"run": run, "cells": [lookup.get((run, *column)) for column in columns]}
        for run in dict.fromkeys(summary["run"])
    ]
    context = {"report": report, "columns": columns, "rows": rows, "cutoffs": report.cutoffs}
    return render(request, "metrics/report_detail.html", context)


@researcher_required
def report_csv(request: HttpRequest, name: str) -> HttpResponse:
    from . import formatting

    report = get_object_or_404(Report, name=name)
    response = HttpResponse(
        formatting.results_csv(selectors.report_summary(report)), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{report.name}.csv"'
    return response


@researcher_required
def report_per_query_csv(request: HttpRequest, name: str) -> HttpResponse:
    from . import formatting

    report = get_object_or_404(Report, name=name)
    try:
        body = formatting.per_query_csv(selectors.report_per_query(report))
    except ServiceError as exc:
        raise Http404(str(exc)) from None
    response = HttpResponse(body, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{report.name}-per-query.csv"'
    return response


@researcher_required
def report_plot(request: HttpRequest, name: str, kind: str) -> HttpResponse:
    """``cutoffs``: every metric against the cutoff; ``distribution``: per-query box plots at ``?cutoff=``."""
    from . import plots

    report = get_object_or_404(Report, name=name)
    if kind == "cutoffs":
        png = plots.cutoff_figure(selectors.report_summary(report))
    elif kind == "distribution":
        try:
            cutoff = int(request.GET.get("cutoff", max(report.cutoffs)))
            per_query = selectors.report_per_query(report)
        except (ValueError, ServiceError) as exc:
            raise Http404(str(exc)) from None
        if cutoff not in report.cutoffs:
            raise Http404(f"the report has no cutoff {cutoff}")
        png = plots.distribution_figure(per_query, cutoff)
    else:
        raise Http404("plots: cutoffs, distribution")
    response = HttpResponse(png, content_type="image/png")
    if request.GET.get("download"):
        response["Content-Disposition"] = f'attachment; filename="{report.name}-{kind}.png"'
    return response


@researcher_required
@require_POST
def report_create(request: HttpRequest) -> HttpResponse:
    """Build a report as a Celery task (inline without a broker), then follow its job."""
    form = ReportForm(request.POST)
    if not form.is_valid():
        reports = Report.objects.select_related("query_set").prefetch_related("runs")
        return render(request, "metrics/report_list.html", {"reports": reports, "form": form}, status=400)
    return redirect("core:job-detail", pk=form.start().pk)

"""Pages of the studies beside the reports: label sensitivity, CRBO and the counterfactual collection,
the variants' preference, the same runs across query sets, and the study plan's panel."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from core.errors import ServiceError
from core.jobs import TooManyJobs
from core.models import Job
from core.spreadsheet import csv_text
from core.templatetags.roles import may_act
from core.web.paging import table_page
from core.web.permissions import researcher_required
from pooling import selectors as pooling_selectors

from .. import services
from ..forms.study_forms import (
    CompareSetsForm,
    CounterfactualForm,
    CrboForm,
    LabelSensitivityForm,
    PlanForm,
    PreferenceForm,
)
from ..models import LabelSensitivityResult


@researcher_required
def label_sensitivity(request: HttpRequest) -> HttpResponse:
    """How the aggregation and the handling of disputed queries move the runs' bias. POST asks for it: a kept
    result opens at once, else the page follows the job computing it. ``?result=<id>`` shows a kept result with its
    plot (``&cutoff=``), or follows its job while it runs.
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
    """What the page shows of a kept label-sensitivity result, its plot at ``cutoff`` (default the largest)."""
    import base64

    import pandas as pd

    from .. import study_figures

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
    """The form of a measure and the measurements made so far; a valid POST starts one as a job and follows it."""
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
    # Each query's text beside its id, read for the rows of this page only.
    runs = [job.result["run"], job.result["counterfactual_run"]]
    texts = pooling_selectors.run_query_texts(runs, [qid for qid, _ in table.rows])
    rows = [(qid, texts.get(qid, ""), value) for qid, value in table.rows]
    context = {"job": job, "result": job.result, "table": table, "rows": rows}
    return render(request, "metrics/crbo_detail.html", context)


@researcher_required
def crbo_plot(request: HttpRequest, pk: int) -> HttpResponse:
    from .. import study_figures

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
    from .. import study_figures

    job = _measurement(services.preference_job.kind, pk)
    fractions = {version: won["fraction"] for version, won in job.result["wins"].items()}
    return HttpResponse(study_figures.preference_figure(fractions), content_type="image/png")


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
    cost = plan["cost"].get(provider) if plan and plan.get("cost") else None
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

"""Pages of the annotation app: thin shells over services.

Two audiences: in-house annotators (the ``annotators`` group) answer HITs one after the
other and only ever see their own assignment; researchers (staff) follow batches, start
the provider work as background jobs and read agreement and disputed votes.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation.labels import LABEL_NAMES, LABELS
from core.permissions import researcher_required

from . import services
from .forms import EscalateForm, HitAnswerForm
from .models import Assignment, Batch, Hit
from .services.escalation import DEFAULT_MAX_ASSIGNMENTS
from .services.results import query_results


@login_required
def batch_list(request: HttpRequest) -> HttpResponse:
    """Researchers see every batch; annotators see where to start."""
    if not request.user.is_staff:
        return render(request, "annotation/annotator_home.html", {"annotator": services.is_annotator(request.user)})
    batches = [(batch, services.batch_progress(batch)) for batch in Batch.objects.select_related("query_set", "pool")]
    return render(request, "annotation/batch_list.html", {"batches": batches})


@researcher_required
def batch_detail(request: HttpRequest, name: str) -> HttpResponse:
    batch = get_object_or_404(Batch.objects.select_related("query_set", "pool"), name=name)
    hits = batch.hits.order_by("position").prefetch_related("assignments")
    return render(
        request,
        "annotation/batch_detail.html",
        {
            "batch": batch,
            "progress": services.batch_progress(batch),
            "hits": hits,
            "exports": batch.exports.all(),
            "escalations": batch.escalations.select_related("hit"),
        },
    )


def _start(request: HttpRequest, name: str, start) -> HttpResponse:
    batch = get_object_or_404(Batch, name=name)
    try:
        job = start(batch)
    except services.ServiceError as exc:
        messages.error(request, str(exc))
        return redirect("annotation:batch-detail", name=batch.name)
    return redirect("core:job-detail", pk=job.pk)


@researcher_required
@require_POST
def batch_publish(request: HttpRequest, name: str) -> HttpResponse:
    return _start(request, name, services.start_publish)


@researcher_required
@require_POST
def batch_sync(request: HttpRequest, name: str) -> HttpResponse:
    approve_all = request.POST.get("approve_all") == "on"
    return _start(request, name, lambda batch: services.start_sync(batch, approve_all=approve_all))


@researcher_required
@require_POST
def batch_cancel(request: HttpRequest, name: str) -> HttpResponse:
    batch = get_object_or_404(Batch, name=name)
    try:
        expired = services.cancel_batch(batch)
    except services.ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Batch cancelled; {expired} HIT(s) withdrawn.")
    return redirect("annotation:batch-detail", name=batch.name)


@researcher_required
def batch_escalate(request: HttpRequest, name: str) -> HttpResponse:
    """Show which HITs would get one more assignment and what it costs; start it on confirmation."""
    batch = get_object_or_404(Batch, name=name)
    form = EscalateForm(request.POST or None)
    cap = DEFAULT_MAX_ASSIGNMENTS
    if form.is_bound and form.is_valid():
        cap = form.cleaned_data["max_assignments"]
    elif request.GET.get("max_assignments", "").isdigit():
        cap = int(request.GET["max_assignments"])
    try:
        plan = services.plan_escalation(batch, cap)
    except services.ServiceError as exc:
        messages.error(request, str(exc))
        return redirect("annotation:batch-detail", name=batch.name)
    if form.is_bound and form.is_valid():
        # Only what the page showed (and its cost) is paid for, whatever was synced since.
        confirmed = [int(pk) for pk in request.POST.get("hits", "").split(",") if pk.isdigit()]
        return _start(
            request, name, lambda b: services.start_escalate(b, max_assignments=cap, confirmed_hits=confirmed)
        )
    return render(request, "annotation/batch_escalate.html", {"batch": batch, "plan": plan, "form": form})


@researcher_required
def batch_agreement(request: HttpRequest, name: str) -> HttpResponse:
    batch = get_object_or_404(Batch, name=name)
    report = services.agreement(batch, bootstrap=500)
    labelled_total = sum(report["labels"].values()) or 1
    label_bars = [
        {
            "label": label,
            "name": LABEL_NAMES[label],
            "count": report["labels"][label],
            "percent": 100 * report["labels"][label] / labelled_total,
        }
        for label in LABELS
    ]
    category_alpha = [
        {
            "name": LABEL_NAMES[label],
            "alpha": value,
            "ac1": report["per_category_ac1"].get(label),
            "percent": max(0.0, value or 0.0) * 100,
        }
        for label, value in report["per_category_alpha"].items()
    ]
    matrix = report["confusion"]["matrix"]
    peak = max((max(row) for row in matrix), default=0) or 1
    # Shades at most half-strength, so the dark figures on them stay readable.
    confusion = [
        {"name": LABEL_NAMES[label], "cells": [{"value": v, "shade": round(0.5 * v / peak, 2)} for v in row]}
        for label, row in zip(report["confusion"]["labels"], matrix, strict=True)
    ]
    set_aside = [r for r in query_results(batch) if r["label"] is None and r["votes"]]
    return render(
        request,
        "annotation/batch_agreement.html",
        {
            "batch": batch,
            "report": report,
            "label_bars": label_bars,
            "category_alpha": category_alpha,
            "confusion": confusion,
            "label_names": [LABEL_NAMES[label] for label in LABELS],
            "set_aside": set_aside,
        },
    )


@researcher_required
def batch_query(request: HttpRequest, name: str, qid: str) -> HttpResponse:
    """Every pseudonymous vote on one query, with what majority vote and Dawid-Skene made of them."""
    batch = get_object_or_404(Batch, name=name)
    result = next((r for r in query_results(batch) if r["qid"] == qid), None)
    if result is None:
        raise Http404("no such query in this batch")
    for vote in result["votes"]:
        vote["name"] = LABEL_NAMES[vote["label"]]
    return render(
        request,
        "annotation/batch_query.html",
        {"batch": batch, "result": result, "label_names": LABEL_NAMES},
    )


@researcher_required
def hit_preview(request: HttpRequest, name: str, position: int) -> HttpResponse:
    """The HIT page exactly as MTurk workers get it (submit disabled: no assignment id)."""
    hit = get_object_or_404(Hit, batch__name=name, position=position)
    return HttpResponse(services.render_hit_html(hit, mode="preview", action=""))


@login_required
def next_hit(request: HttpRequest) -> HttpResponse:
    """Send an annotator to the HIT they are on, or to a new one."""
    if not services.is_annotator(request.user):
        raise PermissionDenied("Only annotators are given HITs.")
    assignment = services.next_assignment(request.user)
    if assignment is None:
        return render(request, "annotation/no_more_hits.html", status=200)
    return redirect("annotation:assignment", pk=assignment.pk)


@login_required
def assignment_page(request: HttpRequest, pk: int) -> HttpResponse:
    """One HIT for its annotator: the shared HIT page, posting back here."""
    assignment = get_object_or_404(
        Assignment.objects.select_related("hit__batch", "worker__identity"),
        pk=pk,
        worker__identity__user=request.user,
    )
    if assignment.status not in (Assignment.Status.ASSIGNED, Assignment.Status.ABANDONED):
        messages.info(request, "You already submitted that HIT.")
        return redirect("annotation:next")
    hit = assignment.hit
    hit_queries = list(hit.hit_queries.select_related("batch_query").order_by("position"))
    action = reverse("annotation:assignment", args=[assignment.pk])
    if request.method == "POST":
        form = HitAnswerForm(hit_queries, request.POST)
        if form.is_valid():
            try:
                services.submit_local_assignment(assignment, form.cleaned_data)
            except services.ServiceError as exc:
                messages.error(request, str(exc))
            return redirect("annotation:next")
        context = services.hit_page_context(
            hit,
            mode="local",
            action=action,
            answers={k: v for k, v in request.POST.items() if k.startswith("q-")},
            errors=form.field_errors(),
        )
        return render(request, "annotation/hit.html", context, status=400)
    return render(request, "annotation/hit.html", services.hit_page_context(hit, mode="local", action=action))

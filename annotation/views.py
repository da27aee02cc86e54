"""Pages of the annotation app: thin shells over services.

Two audiences: in-house annotators (the ``annotators`` group) answer HITs one after the
other and only ever see their own assignment; researchers (staff) follow batches, start
the provider work as background jobs and read agreement and disputed votes.
"""

from __future__ import annotations

import logging

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation.labels import LABEL_NAMES, LABELS
from core.errors import ServiceError
from core.paging import table_page
from core.permissions import researcher_required
from core.uploads import staged_uploads

from . import services
from .downloads import export_file_response
from .forms import AdjudicateForm, BatchForm, EscalateForm, ExportForm, HitAnswerForm, TrainingAnswerForm
from .models import Assignment, Batch, Export, Hit, Provider
from .pseudonyms import worker_for
from .services.budget import extra_spent
from .services.escalation import DEFAULT_MAX_ASSIGNMENTS
from .services.local import local_worker
from .services.publishing import CATEGORIES
from .services.results import query_results
from .services.training import qualification_of, submit_training, training_due

logger = logging.getLogger(__name__)


@login_required
def batch_list(request: HttpRequest) -> HttpResponse:
    """Researchers see every batch; annotators see where to start."""
    if not request.user.is_staff:
        return render(request, "annotation/annotator_home.html", {"annotator": services.is_annotator(request.user)})
    return render(request, "annotation/batch_list.html", _batch_table())


def _batch_table() -> dict:
    batches = [(batch, services.batch_progress(batch)) for batch in Batch.objects.select_related("query_set", "pool")]
    return {"batches": batches, "any_published": any(b.status == Batch.Status.PUBLISHED for b, _ in batches)}


@researcher_required
def batch_list_live(request: HttpRequest) -> HttpResponse:
    """The batch list's table (htmx polls it while a batch is published)."""
    return render(request, "annotation/_batch_table.html", _batch_table())


@researcher_required
@staged_uploads
def batch_create(request: HttpRequest) -> HttpResponse:
    """A new batch from a pool or a query set, with the cost estimated live before confirming."""
    if request.method == "POST":
        files = request.FILES  # parsing the body sets upload_too_large
        form = BatchForm(request.POST, files, too_large=getattr(request, "upload_too_large", None))
        if form.is_valid():
            try:
                batch = form.create()
            except ServiceError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, f"Batch {batch.name} created: publish it when ready.")
                return redirect("annotation:batch-detail", name=batch.name)
        return render(request, "annotation/batch_form.html", {"form": form}, status=400)
    initial = {key: request.GET[key] for key in ("pool", "queries") if request.GET.get(key)}
    return render(request, "annotation/batch_form.html", {"form": BatchForm(initial=initial)})


@researcher_required
@require_GET
def batch_estimate(request: HttpRequest) -> HttpResponse:
    """The live cost estimate of the batch form (htmx swaps it in as the fields change)."""
    form = BatchForm(request.GET, estimate_only=True)
    estimate = form.estimate() if form.is_valid() else None
    return render(request, "annotation/_batch_estimate.html", {"form": form, "estimate": estimate})


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
            "agreement": services.agreement(batch, bootstrap=0),
            "hits": hits,
            "exports": batch.exports.select_related("query_set"),
            "export_form": ExportForm(),
            "escalations": batch.escalations.select_related("hit"),
            "failed_gold": _failed_gold(batch),
            "extra_spent": extra_spent(batch),
            "flags": batch.worker_flags.count(),
        },
    )


def _failed_gold(batch: Batch):
    """Work that failed the gold questions, with the reason the worker was given."""
    return (
        Assignment.objects.filter(hit__batch=batch, gold_passed=False)
        .select_related("hit", "worker")
        .order_by("hit__position", "pk")
    )


@researcher_required
def batch_live(request: HttpRequest, name: str) -> HttpResponse:
    """The batch page's live part (htmx polls it while the batch is published)."""
    batch = get_object_or_404(Batch.objects.select_related("query_set", "pool"), name=name)
    context = {
        "batch": batch,
        "progress": services.batch_progress(batch),
        "agreement": services.agreement(batch, bootstrap=0),
        "failed_gold": _failed_gold(batch),
    }
    return render(request, "annotation/_batch_live.html", context)


def _start(request: HttpRequest, name: str, start) -> HttpResponse:
    batch = get_object_or_404(Batch, name=name)
    try:
        job = start(batch)
    except ServiceError as exc:
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
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Batch cancelled; {expired} HIT(s) withdrawn.")
    return redirect("annotation:batch-detail", name=batch.name)


@researcher_required
def batch_escalate(request: HttpRequest, name: str) -> HttpResponse:
    """Show which HITs would get one more assignment and what it costs; start it on confirmation."""
    batch = get_object_or_404(Batch, name=name)
    form = EscalateForm(request.POST or None)
    cap, until = DEFAULT_MAX_ASSIGNMENTS, request.GET.get("until", "majority")
    if form.is_bound and form.is_valid():
        cap, until = form.cleaned_data["max_assignments"], form.cleaned_data["until"] or "majority"
    elif request.GET.get("max_assignments", "").isdigit():
        cap = int(request.GET["max_assignments"])
    try:
        plan = services.plan_escalation(batch, cap, until)
    except ServiceError as exc:
        messages.error(request, str(exc))
        return redirect("annotation:batch-detail", name=batch.name)
    if form.is_bound and form.is_valid():
        # Only what the page showed (and its cost) is paid for, whatever was synced since.
        confirmed = [int(pk) for pk in request.POST.get("hits", "").split(",") if pk.isdigit()]
        return _start(
            request,
            name,
            lambda b: services.start_escalate(b, max_assignments=cap, confirmed_hits=confirmed, until=until),
        )
    if not form.is_bound:
        form = EscalateForm(initial={"max_assignments": cap, "until": until})
    return render(request, "annotation/batch_escalate.html", {"batch": batch, "plan": plan, "form": form})


@researcher_required
@require_POST
def batch_export(request: HttpRequest, name: str) -> HttpResponse:
    """Export labelled queries, then hand the file straight to the browser."""
    batch = get_object_or_404(Batch, name=name)
    form = ExportForm(request.POST)
    if not form.is_valid():
        messages.error(request, "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()))
        return redirect("annotation:batch-detail", name=batch.name)
    data = form.cleaned_data
    try:
        export = services.export_for_download(
            batch, data["category"], data["format"], as_query_set=data["as_query_set"] or None
        )
    except ServiceError as exc:
        messages.error(request, str(exc))
        return redirect("annotation:batch-detail", name=batch.name)
    messages.success(request, f"Exported {export.queries} {export.category} queries.")
    return redirect("annotation:export-download", pk=export.pk, part="file")


@researcher_required
def export_download(request: HttpRequest, pk: int, part: str) -> FileResponse:
    if part not in ("file", "card"):
        raise Http404("parts: file, card")
    return export_file_response(get_object_or_404(Export.objects.select_related("batch"), pk=pk), part)


@researcher_required
def batch_agreement(request: HttpRequest, name: str) -> HttpResponse:
    batch = get_object_or_404(Batch, name=name)
    answers = services.BatchAnswers(batch)
    report = services.agreement(batch, answers=answers)
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
    set_aside = table_page(
        request,
        [r for r in query_results(batch, answers) if r["label"] is None and r["votes"]],
        lambda r: f"{r['qid']} {r['query']}",
    )
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
            "worker_quality": services.worker_quality(batch),
        },
    )


@researcher_required
def batch_query(request: HttpRequest, name: str, qid: str) -> HttpResponse:
    """Every pseudonymous vote on one query, what majority vote and Dawid-Skene made of them,
    and the form a researcher settles it with (POST: adjudicate, then back here)."""
    batch = get_object_or_404(Batch, name=name)
    result = next((r for r in query_results(batch) if r["qid"] == qid), None)
    if result is None:
        raise Http404("no such query in this batch")
    initial = (
        {"label": result["adjudication"]["label"], "reason": result["adjudication"]["reason"]}
        if (result["adjudication"])
        else None
    )
    form = AdjudicateForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            services.adjudicate(batch, qid, form.cleaned_data["label"], form.cleaned_data["reason"], request.user)
        except ServiceError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Query {qid} adjudicated as {LABEL_NAMES[form.cleaned_data['label']]}.")
            return redirect("annotation:batch-query", name=batch.name, qid=qid)
    for vote in result["votes"]:
        vote["name"] = LABEL_NAMES[vote["label"]]
    return render(
        request,
        "annotation/batch_query.html",
        {"batch": batch, "result": result, "label_names": LABEL_NAMES, "form": form},
        status=400 if form.is_bound and not form.is_valid() else 200,
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
    due = training_due(Batch.objects.filter(provider=Provider.LOCAL), local_worker(request.user))
    if due is not None:
        return redirect("annotation:training", name=due.name)
    assignment = services.next_assignment(request.user)
    if assignment is None:
        return render(request, "annotation/no_more_hits.html", status=200)
    return redirect("annotation:assignment", pk=assignment.pk)


@login_required
def training_page(request: HttpRequest, name: str) -> HttpResponse:
    """The batch's qualification step for an in-house annotator: the shared HIT page, then the result."""
    if not services.is_annotator(request.user):
        raise PermissionDenied("Only annotators take the training.")
    batch = get_object_or_404(Batch, name=name, provider=Provider.LOCAL, status=Batch.Status.PUBLISHED)
    return _training(request, batch, local_worker(request.user), mode="local", continue_url=reverse("annotation:next"))


def _training(request: HttpRequest, batch: Batch, worker, *, mode: str, continue_url: str) -> HttpResponse:
    """The training queries on the shared HIT page; once answered (or if already), the result."""
    queries = list(batch.training_queries.order_by("position"))
    if not queries:
        raise Http404("This batch has no training step.")
    result = qualification_of(batch, worker)
    form = TrainingAnswerForm(queries, request.POST or None)
    if result is None and request.method == "POST" and form.is_valid():
        result = submit_training(batch, worker, form.cleaned_data)
    if result is not None:
        context = {"batch": batch, "result": result, "continue_url": continue_url, "mode": mode}
        return render(request, "annotation/training_result.html", context)
    answers = {k: v for k, v in request.POST.items() if k.startswith("q-")}
    errors = form.field_errors() if request.method == "POST" else {}
    context = {
        "mode": mode,
        "action": request.path,
        "hit": {"position": "training", "batch": batch},
        "title": f"Training for {batch.title}",
        "queries": [
            {
                "field": q.field_name,
                "position": q.position,
                "text": q.text,
                "selected": answers.get(q.field_name, ""),
                "error": errors.get(q.field_name, ""),
            }
            for q in queries
        ],
        "categories": CATEGORIES,
        "errors": errors,
    }
    if mode == "local":
        context["answered_count"] = services.answered_count(request.user)
    return render(request, "annotation/hit.html", context, status=400 if errors else 200)


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
                check = services.submit_local_assignment(assignment, form.cleaned_data)
            except ServiceError as exc:
                messages.error(request, str(exc))
            else:
                if check.gold_passed is False:
                    # Shown on the annotator's home page (the HIT page is self-contained and shows
                    # no messages), from where "Start annotating" continues with the next HIT.
                    assignment.refresh_from_db(fields=["feedback"])
                    messages.warning(request, f"This HIT will not count: {assignment.feedback}")
                    return redirect("annotation:batch-list")
                count = services.answered_count(request.user)
                messages.success(
                    request,
                    f"Thank you: your answers to HIT {hit.position} of {hit.batch.name} were recorded. "
                    f"You have submitted {count} HIT{'s' if count != 1 else ''}.",
                )
            return redirect("annotation:next")
        context = services.hit_page_context(
            hit,
            mode="local",
            action=action,
            answers={k: v for k, v in request.POST.items() if k.startswith("q-")},
            errors=form.field_errors(),
        )
        context["answered_count"] = services.answered_count(request.user)
        return render(request, "annotation/hit.html", context, status=400)
    context = services.hit_page_context(hit, mode="local", action=action)
    context["answered_count"] = services.answered_count(request.user)
    return render(request, "annotation/hit.html", context)


#: Session key listing the assignments this browser was given from Prolific (no account needed).
PROLIFIC_SESSION_KEY = "prolific_assignments"
PROLIFIC_TRAINING_KEY = "prolific_training"
#: A random secret of this browser: the Prolific sessions it opens are bound to it.
PROLIFIC_BROWSER_KEY = "prolific_browser"


def _prolific_page(request: HttpRequest, message: str, status: int, *, return_link: bool = False) -> HttpResponse:
    from .providers.prolific import return_url

    context = {"message": message, "return_url": return_url() if return_link else ""}
    return render(request, "annotation/no_more_hits.html", context, status=status)


def prolific_start(request: HttpRequest, name: str) -> HttpResponse:
    """Where the Prolific study URL leads: confirm the session with Prolific, then hand the participant a HIT."""
    import secrets

    from .providers.prolific import RETURN_MESSAGE
    from .providers.prolific_api import ProlificError
    from .services import prolific

    batch = get_object_or_404(Batch, name=name, provider="prolific")
    link = [request.GET.get(key, "") for key in ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")]
    browser = request.session.setdefault(PROLIFIC_BROWSER_KEY, secrets.token_urlsafe(32))
    try:
        session = prolific.verify_arrival(batch, *link, browser_secret=browser)
    except ProlificError:
        logger.exception("Prolific could not confirm session %r of batch %s", link[2][:64], batch.name)
        message = "We could not confirm your session with Prolific just now. Please reload this page in a minute."
        return _prolific_page(request, message, 503)
    except prolific.StudyClosed as exc:
        return _prolific_page(request, str(exc), 200, return_link=True)
    except prolific.ArrivalRefused as exc:
        return _prolific_page(request, str(exc), 403)
    except ServiceError as exc:
        return _prolific_page(request, str(exc), 400)
    if batch.training_queries.exists():
        taken = qualification_of(batch, worker_for(Provider.PROLIFIC, session.participant_id))
        if taken is None or not taken.passed:
            # The training page knows the participant by this browser's session only.
            request.session[PROLIFIC_TRAINING_KEY] = {"batch": batch.name, "link": link}
            return redirect("annotation:prolific-training", name=batch.name)
    assignment = prolific.arrive(batch, session)
    if assignment is None:
        message = f"All places of this study are taken. {RETURN_MESSAGE}"
        return _prolific_page(request, message, 200, return_link=True)
    allowed = set(request.session.get(PROLIFIC_SESSION_KEY, []))
    request.session[PROLIFIC_SESSION_KEY] = sorted(allowed | {assignment.pk})
    return redirect("annotation:prolific-hit", pk=assignment.pk)


def prolific_training(request: HttpRequest, name: str) -> HttpResponse:
    """The qualification step for a Prolific participant who followed the study link in this browser."""
    from urllib.parse import urlencode

    started = request.session.get(PROLIFIC_TRAINING_KEY) or {}
    if started.get("batch") != name:
        raise PermissionDenied("Open this study from Prolific.")
    batch = get_object_or_404(Batch, name=name, provider=Provider.PROLIFIC, status=Batch.Status.PUBLISHED)
    link = started["link"]
    back = (
        reverse("annotation:prolific-start", args=[batch.name])
        + "?"
        + urlencode(dict(zip(("PROLIFIC_PID", "STUDY_ID", "SESSION_ID"), link, strict=True)))
    )
    return _training(request, batch, worker_for(Provider.PROLIFIC, link[0]), mode="prolific", continue_url=back)


def prolific_hit(request: HttpRequest, pk: int) -> HttpResponse:
    """The shared HIT page for a Prolific participant; after submitting, back to Prolific with the code."""
    from .providers.prolific import completion_url

    if pk not in request.session.get(PROLIFIC_SESSION_KEY, []):
        raise PermissionDenied("Open this study from Prolific.")
    assignment = get_object_or_404(Assignment.objects.select_related("hit__batch"), pk=pk)
    hit = assignment.hit
    if assignment.status not in (Assignment.Status.ASSIGNED, Assignment.Status.ABANDONED):
        return redirect(completion_url(hit.batch))
    hit_queries = list(hit.hit_queries.select_related("batch_query").order_by("position"))
    action = reverse("annotation:prolific-hit", args=[assignment.pk])
    if request.method == "POST":
        form = HitAnswerForm(hit_queries, request.POST)
        if form.is_valid():
            try:
                services.submit_local_assignment(assignment, form.cleaned_data)
            except ServiceError as exc:
                return render(request, "annotation/no_more_hits.html", {"message": str(exc)}, status=409)
            return redirect(completion_url(hit.batch))
        context = services.hit_page_context(
            hit,
            mode="prolific",
            action=action,
            answers={k: v for k, v in request.POST.items() if k.startswith("q-")},
            errors=form.field_errors(),
        )
        return render(request, "annotation/hit.html", context, status=400)
    return render(request, "annotation/hit.html", services.hit_page_context(hit, mode="prolific", action=action))

"""Researchers' pages of a batch: create, follow, publish, sync, cancel, escalate, agreement, export.
The batch list doubles as the annotators' home."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_POST

from annotation.audit.selectors import audit_progress
from annotation.crowd.forms import AdjudicateForm, BatchForm, EscalateForm
from annotation.crowd.panels import annotator_home, batch_panels
from annotation.crowd.selectors import (
    answer_counts,
    answered_per_hit,
    batch_progress,
    failed_gold_work,
    gold_left_out,
    query_texts,
)
from annotation.crowd.services.background import start_publish, start_sync
from annotation.crowd.services.batches import cancel_batch, price_comparison
from annotation.crowd.services.publishing import render_hit_html
from annotation.exports.services import export_for_download
from annotation.models import Assignment, Batch, Export, Hit, Worker
from annotation.models.crowd import DEFAULT_MAX_ASSIGNMENTS
from annotation.quality.selectors import worker_quality
from annotation.quality.services.adjudication import adjudicate
from annotation.quality.services.budget import extra_spent
from annotation.quality.services.escalation import plan_escalation, start_escalate
from annotation.results.export_formats import EXPORT_FORMATS
from annotation.results.selectors.agreement import SetAsidePages, agreement, agreement_summary, set_aside_rows
from annotation.results.selectors.labels import BatchAnswers, cached_for_answers, query_results
from annotation.results.selectors.state import batch_state
from core.errors import ServiceError
from core.natural import natural_key, natural_sorted
from core.services.uploads import staged_uploads
from core.web import paging
from core.web.paging import TablePage, table_page
from core.web.permissions import researcher_required
from genderbias.labels import EXPORT_CATEGORIES, LABEL_NAMES, LABELS
from genderbias.ranking.defaults import LEVEL_PERCENT


@login_required
def batch_list(request: HttpRequest) -> HttpResponse:
    """Researchers see every batch; annotators see where to start."""
    if not request.user.is_staff:
        home = annotator_home(request.user, {"annotator": False, "correctable": None})
        return render(request, "annotation/annotator_home.html", home)
    return render(request, "annotation/batch_list.html", _batch_table())


def _batch_table() -> dict:
    batches = [(batch, batch_state(batch)) for batch in Batch.objects.select_related("query_set", "pool")]
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
    initial = {key: request.GET[key] for key in ("pool", "queries", "gold_set") if request.GET.get(key)}
    return render(request, "annotation/batch_form.html", {"form": BatchForm(initial=initial)})


@researcher_required
@require_GET
def batch_estimate(request: HttpRequest) -> HttpResponse:
    """The live cost estimate of the batch form (htmx swaps it in as the fields change)."""
    form = BatchForm(request.GET, estimate_only=True)
    estimate = form.estimate() if form.is_valid() else None
    comparison = None
    if estimate:
        settings = form.cleaned_data["settings"]
        comparison = price_comparison(
            settings.provider, settings.reward, settings.assignments_per_query, estimate["hits"]
        )
    return render(
        request, "annotation/_batch_estimate.html", {"form": form, "estimate": estimate, "comparison": comparison}
    )


#: HITs listed per page of a batch's page (``?hits=`` picks the page).
HITS_PER_PAGE = 50


@researcher_required
def batch_detail(request: HttpRequest, name: str) -> HttpResponse:
    batch = get_object_or_404(Batch.objects.select_related("query_set", "pool", "parent"), name=name)
    # Answers counted for this page's HITs alone: the page's cost does not grow with the batch.
    hits = Paginator(batch.hits.order_by("position"), HITS_PER_PAGE).get_page(request.GET.get("hits"))
    answered = answered_per_hit([hit.pk for hit in hits])
    for hit in hits:
        hit.answered = answered.get(hit.pk, 0)
    escalations = list(batch.escalations.select_related("hit"))
    texts = query_texts(batch, {qid for e in escalations for qid in e.disputed})
    for e in escalations:
        e.disputed_queries = [(qid, texts.get(str(qid), "")) for qid in e.disputed]
    return render(
        request,
        "annotation/batch_detail.html",
        _live(batch)
        | {
            "hits": hits,
            "exports": batch.exports.select_related("query_set"),
            "export_form": ExportForm(),
            "escalations": escalations,
            "extra_spent": extra_spent(batch),
            "flags": batch.worker_flags.count(),
            "comparison": (  # as its live estimate showed it
                price_comparison(batch.provider, batch.reward, batch.assignments_per_query, batch.cost["hits"])
                if batch.cost and "hits" in batch.cost
                else None
            ),
            "gold_left_out": gold_left_out(batch),
            "audit": audit_progress(batch),
        }
        | batch_panels(batch, ("prolific", "submissions", "bonuses", "unfillable")),
    )


@researcher_required
def batch_live(request: HttpRequest, name: str) -> HttpResponse:
    """The batch page's live part (htmx polls it while the batch is published)."""
    batch = get_object_or_404(Batch.objects.select_related("query_set", "pool"), name=name)
    return render(request, "annotation/_batch_live.html", _live(batch))


def _live(batch: Batch) -> dict:
    """The live part's context (the batch page shows it too): the counts read once for the progress,
    the answers' version and the failed gold work, and a few kept numbers of the agreement."""
    counts = answer_counts([batch.pk])
    counted = counts["assignments"]
    progress = batch_progress(batch, counts=counts)
    answers = BatchAnswers(batch, own_judgments=counts["judged"], own_assignments=counted)
    state = batch_state(batch, progress)
    return {
        "batch": batch,
        "progress": progress,
        "state": state,
        "agreement": agreement_summary(batch, answers=answers, progress=progress),
        "failed_gold": failed_gold_work(batch) if state["gold_failures"] else Assignment.objects.none(),
    }


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
    return _start(request, name, start_publish)


@researcher_required
@require_POST
def batch_sync(request: HttpRequest, name: str) -> HttpResponse:
    approve_all = request.POST.get("approve_all") == "on"
    return _start(request, name, lambda batch: start_sync(batch, approve_all=approve_all))


@researcher_required
@require_POST
def batch_cancel(request: HttpRequest, name: str) -> HttpResponse:
    batch = get_object_or_404(Batch, name=name)
    try:
        expired = cancel_batch(batch)
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Batch cancelled; {expired} HIT(s) withdrawn.")
    return redirect("annotation:batch-detail", name=batch.name)


def _count_or(text: str, field: str, default: int | None) -> int | None:
    """``text`` as an ASCII whole number, else ``default`` (the form then asks for it again)."""
    from genderbias.numbers import NumberError, parse_count

    try:
        return parse_count(text, field, maximum=10**9)
    except NumberError:
        return default


@researcher_required
def batch_escalate(request: HttpRequest, name: str) -> HttpResponse:
    """Show which HITs would get one more assignment and what it costs; start it on confirmation."""
    batch = get_object_or_404(Batch, name=name)
    form = EscalateForm(request.POST or None)
    cap, until = DEFAULT_MAX_ASSIGNMENTS, request.GET.get("until", "majority")
    if form.is_bound and form.is_valid():
        cap, until = form.cleaned_data["max_assignments"], form.cleaned_data["until"] or "majority"
    elif request.GET.get("max_assignments"):
        cap = _count_or(request.GET["max_assignments"], "max_assignments", cap)
    try:
        plan = plan_escalation(batch, cap, until)
    except ServiceError as exc:
        messages.error(request, str(exc))
        return redirect("annotation:batch-detail", name=batch.name)
    if form.is_bound and form.is_valid():
        # Only what the page showed (and its cost) is paid for, whatever was synced since.
        confirmed = [
            n for pk in request.POST.get("hits", "").split(",") if (n := _count_or(pk, "hits", None)) is not None
        ]
        return _start(
            request,
            name,
            lambda b: start_escalate(b, max_assignments=cap, confirmed_hits=confirmed, until=until),
        )
    if not form.is_bound:
        form = EscalateForm(initial={"max_assignments": cap, "until": until})
    return render(request, "annotation/batch_escalate.html", {"batch": batch, "plan": plan, "form": form})


class ExportForm(forms.Form):
    """The batch page's export request: a category of labelled queries in one of the export formats."""

    category = forms.ChoiceField(choices=[(c, c) for c in EXPORT_CATEGORIES], initial="non-gendered")
    format = forms.ChoiceField(choices=[(f.name, f.description) for f in EXPORT_FORMATS.values()])
    as_query_set = forms.SlugField(
        required=False, label="Also register as query set", help_text="e.g. to measure the runs' bias on it"
    )


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
        export = export_for_download(batch, data["category"], data["format"], as_query_set=data["as_query_set"] or None)
    except ServiceError as exc:
        messages.error(request, str(exc))
        return redirect("annotation:batch-detail", name=batch.name)
    messages.success(request, f"Exported {export.queries} {export.category} queries.")
    return redirect("annotation:export-download", pk=export.pk, part="file")


def export_file_response(export: Export, part: str) -> FileResponse:
    """The export's file or its dataset card (pages and API), named by batch, category and format (never the
    server's path) and streamed as an attachment, so a large export never sits in memory."""
    if part == "card":
        path, filename = export.card_path, f"{export.batch.name}-{export.category}.{export.format}.md"
        content_type = "text/markdown; charset=utf-8"
    else:
        path, filename = export.path, f"{export.batch.name}-{export.category}.{export.format}"
        content_type = EXPORT_FORMATS[export.format].content_type + "; charset=utf-8"
    try:
        handle = open(path, "rb")  # noqa: SIM115 (FileResponse closes it)
    except FileNotFoundError:
        raise Http404("the exported file is gone from the server; export again") from None
    return FileResponse(handle, as_attachment=True, filename=filename, content_type=content_type)


@researcher_required
def export_download(request: HttpRequest, pk: int, part: str) -> FileResponse:
    if part not in ("file", "card"):
        raise Http404("parts: file, card")
    return export_file_response(get_object_or_404(Export.objects.select_related("batch"), pk=pk), part)


@researcher_required
def batch_agreement(request: HttpRequest, name: str) -> HttpResponse:
    """The agreement report. What depends on the answers alone is rendered once per answer version
    (:func:`cached_for_answers`), the report read only when a part is missing; who is blocked or
    flagged (not an answer) is read at each view."""
    batch = get_object_or_404(Batch, name=name)
    answers = BatchAnswers(batch)

    def report() -> dict:  # at most once a request: agreement keeps it on ``answers``
        return agreement(batch, answers=answers, progress={})

    # Kept under what else they show: the batch's name (in links) and the interval's resamples.
    kept = f"{batch.name}:{settings.AGREEMENT_BOOTSTRAP_RESAMPLES}"
    figures = cached_for_answers(answers, f"agreement-figures:{kept}", lambda: _agreement_figures(batch, report()))
    dawid_skene = cached_for_answers(
        answers,
        f"agreement-dawid-skene:{kept}",
        lambda: render_to_string(
            "annotation/_agreement_dawid_skene.html",
            {
                "batch": batch,
                "report": report()
                | {"method_disagreements": natural_sorted(report()["method_disagreements"], lambda r: r["qid"])},
            },
        ),
    )
    return render(
        request,
        "annotation/batch_agreement.html",
        {
            "batch": batch,
            "figures": mark_safe(figures),  # rendered by a template, escaped there
            "dawid_skene": mark_safe(dawid_skene),
            "set_aside": _set_aside_table(request, batch, answers),
            "worker_quality": _worker_quality(batch, answers, report),
        },
    )


def _set_aside_table(request: HttpRequest, batch: Batch, answers: BatchAnswers) -> TablePage:
    """The set-aside table's page: searched or sorted, :func:`table_page` over the whole list; else the
    one page asked for, from the list kept in pages (:class:`SetAsidePages`)."""
    text_of = lambda r: f"{r['qid']} {r['query']}"  # noqa: E731
    query = request.GET.get("q", "").strip()[:200]
    sort = request.GET.get("sort", "").strip()
    if query or sort.lstrip("-") in SET_ASIDE_SORTS:
        # Every qid table of the page in the same, natural order ("2" before "10").
        return table_page(request, set_aside_rows(batch, answers), text_of, sort_keys=SET_ASIDE_SORTS)
    per_page = paging.ROWS_PER_PAGE  # read at each view, as table_page reads it
    pages = SetAsidePages(batch, answers, per_page)
    return TablePage(
        Paginator(pages, per_page).get_page(request.GET.get("page")), "", len(pages), "", tuple(SET_ASIDE_SORTS)
    )


def _worker_quality(batch: Batch, answers: BatchAnswers, report) -> list[dict]:
    """:func:`worker_quality`, its figures kept per answer version, who is blocked and flagged read at
    each view. ``report``: the agreement report, or a callable giving it (called only when not kept)."""
    rows = cached_for_answers(
        answers, "worker-quality", lambda: worker_quality(batch, report() if callable(report) else report)
    )
    blocked = dict(
        Worker.objects.filter(pseudonym__in=[row["worker"] for row in rows]).values_list("pseudonym", "blocked")
    )
    flags = {f.worker.pseudonym: f for f in batch.worker_flags.select_related("worker")}
    return [
        row
        | {
            "blocked": blocked.get(row["worker"], row["blocked"]),
            "flag": flags[row["worker"]].level if row["worker"] in flags else None,
            "flag_reason": flags[row["worker"]].reason if row["worker"] in flags else "",
        }
        for row in rows
    ]


def _agreement_figures(batch: Batch, report: dict) -> str:
    labelled_count = sum(report["labels"].values())
    labelled_total = labelled_count or 1
    label_bars = [
        {
            "label": label,
            "name": LABEL_NAMES[label],
            "count": report["labels"][label],
            "percent": 100 * report["labels"][label] / labelled_total,
        }
        for label in LABELS
    ]
    # Each bar is drawn from the value it stands beside (0 to 1; below 0 drawn empty).
    category_alpha = [
        {
            "name": LABEL_NAMES[label],
            "alpha": value,
            "ac1": report["per_category_ac1"].get(label),
            "alpha_percent": _bar_percent(value),
            "ac1_percent": _bar_percent(report["per_category_ac1"].get(label)),
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
    return render_to_string(
        "annotation/_agreement_figures.html",
        {
            "batch": batch,
            "report": report,
            "level": LEVEL_PERCENT,
            "label_bars": label_bars,
            "labelled_count": labelled_count,
            "category_alpha": category_alpha,
            "confusion": confusion,
            "label_names": [LABEL_NAMES[label] for label in LABELS],
        },
    )


def _bar_percent(value: float | None) -> float:
    return min(1.0, max(0.0, value or 0.0)) * 100


#: The set-aside table's columns a researcher may sort the whole list by (``?sort=``, ``-`` descending).
SET_ASIDE_SORTS = {
    "qid": lambda r: natural_key(r["qid"]),
    "query": lambda r: r["query"].casefold(),
    **{label: (lambda r, label=label: r["counts"][label]) for label in LABELS},
    "ds": lambda r: LABEL_NAMES.get(r["dawid_skene"] or "", "~"),
}


@researcher_required
def batch_query(request: HttpRequest, name: str, qid: str) -> HttpResponse:
    """Every pseudonymous vote on one query, what majority vote and Dawid-Skene made of them, and the
    form a researcher settles it with."""
    batch = get_object_or_404(Batch, name=name)
    result = next((r for r in query_results(batch) if r["qid"] == qid), None)
    if result is None:
        raise Http404("no such query in this batch")
    ruling = result["adjudication"]
    form = AdjudicateForm(
        request.POST or None, initial=ruling and {"label": ruling["label"], "reason": ruling["reason"]}
    )
    if request.method == "POST" and form.is_valid():
        try:
            adjudicate(batch, qid, form.cleaned_data["label"], form.cleaned_data["reason"], request.user)
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
    return HttpResponse(render_hit_html(hit, mode="preview", action=""))

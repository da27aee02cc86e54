"""The review queue: a researcher walks a batch's disputed (or settled, escalated, gold-failed)
queries one by one and rules on each with a reason, from the keyboard. A ruling posted by htmx
answers with the query's panel and the counts swapped out of band; without JavaScript the form
posts and redirects back."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from annotation.crowd.forms import AdjudicateForm
from annotation.models import Batch
from annotation.quality.selectors import following_query, review_queue
from annotation.quality.services.adjudication import adjudicate
from annotation.results.review import (
    DISPUTED,
    REVIEW_STATUSES,
    STATUS_NAMES,
    next_query,
    status_counts,
    with_status,
)
from core.errors import ServiceError
from core.web.permissions import researcher_required
from genderbias.labels import LABEL_NAMES, VOCABULARY


def _status(request: HttpRequest) -> str:
    status = request.POST.get("status") or request.GET.get("status") or DISPUTED
    if status not in REVIEW_STATUSES:
        raise Http404(f"unknown status {status!r}; choose one of {', '.join(REVIEW_STATUSES)}")
    return status


def _review_url(batch: Batch, status: str, **params: str) -> str:
    return f"{reverse('annotation:batch-review', args=[batch.name])}?{urlencode({'status': status, **params})}"


def _context(
    batch: Batch, rows: list[dict], total: int, status: str, current: dict | None, form=None, ruled=False
) -> dict:
    in_filter = with_status(rows, status)
    if current is not None:
        for vote in current["votes"]:
            vote["name"] = LABEL_NAMES[vote["label"]]
        current["tags"] = [STATUS_NAMES[s] for s in current["statuses"]]
        current["count_rows"] = [{"label": label, "count": current["counts"][label.code]} for label in VOCABULARY]
    chosen = (form.data.get("label") if form is not None and form.is_bound else None) or (
        current["adjudication"]["label"] if current and current["adjudication"] else None
    )
    return {
        "batch": batch,
        "status": status,
        "status_name": STATUS_NAMES[status],
        "filters": [
            {"status": s, "name": STATUS_NAMES[s], "count": n, "url": _review_url(batch, s)}
            for s, n in status_counts(rows).items()
        ],
        "total": total,
        "current": current,
        "position": next((i for i, row in enumerate(in_filter, 1) if current and row["qid"] == current["qid"]), None),
        "in_filter": len(in_filter),
        "labels": VOCABULARY,
        "chosen": chosen,
        "reason": form.data.get("reason", "") if form is not None and form.is_bound else "",
        "form": form,
        "ruled": ruled,
        "status_names": STATUS_NAMES,
        "next_url": _review_url(batch, status, after=current["qid"]) if current else None,
    }


@researcher_required
def batch_review(request: HttpRequest, name: str) -> HttpResponse:
    """GET ``?status=`` (default disputed) and ``?qid=``: that query, else the first with the status;
    ``?after=qid``: redirect to the next query with the status. POST: a ruling on ``qid``."""
    batch = get_object_or_404(Batch, name=name)
    status = _status(request)
    if request.method == "POST":
        return _rule(request, batch, status)
    queue = review_queue(batch)
    if "after" in request.GET:
        following = following_query(batch, queue.rows, status, request.GET["after"])
        return redirect(_review_url(batch, status, **({"qid": following["qid"]} if following else {})))
    qid = request.GET.get("qid")
    if qid is not None:
        current = queue.find(qid)
        if current is None:
            raise Http404("no such query in this batch")
    else:
        current = queue.full(next_query(queue.rows, status))
    return render(request, "annotation/review.html", _context(batch, queue.rows, queue.total, status, current))


def _rule(request: HttpRequest, batch: Batch, status: str) -> HttpResponse:
    qid = request.POST.get("qid", "")
    form = AdjudicateForm(request.POST)
    error = None
    if form.is_valid():
        try:
            adjudicate(batch, qid, form.cleaned_data["label"], form.cleaned_data["reason"], request.user)
        except ServiceError as exc:
            error = str(exc)
    ok = form.is_valid() and error is None
    htmx = request.headers.get("HX-Request") == "true"
    if ok and not htmx:
        return redirect(_review_url(batch, status, qid=qid))
    queue = review_queue(batch)
    current = queue.find(qid)
    if current is None:
        raise Http404("no such query in this batch")
    context = _context(batch, queue.rows, queue.total, status, current, form=None if ok else form, ruled=ok)
    context["error"] = error
    template = "annotation/_review_panel.html" if htmx else "annotation/review.html"
    return render(request, template, context | {"oob": htmx}, status=200 if ok else 400)

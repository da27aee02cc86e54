"""Pages of a batch's expert audit sample: its state with the forms to draw, import and trust
(``/batches/<name>/audit/``), and one audited query at a time, blind to the crowd's answers
(``.../audit/label/``). Members of the batch's group read; researchers and trusted labellers label.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotation.audit import selectors
from annotation.audit.forms import DrawForm, ImportForm, TrustForm
from annotation.audit.services.samples import draw_audit_sample, import_audit_labels, label_audit_query, trust_labeller
from annotation.crowd.services.publishing import CATEGORIES
from annotation.models import Batch
from core.errors import ServiceError
from core.forms import add_service_error
from core.services.uploads import staged_uploads
from core.templatetags.roles import may_act


def _page(request: HttpRequest, batch: Batch, status: int = 200, **forms) -> HttpResponse:
    sample = selectors.audit_sample(batch)
    context = {
        "batch": batch,
        "progress": selectors.audit_progress(batch),
        "items": selectors.audit_items(batch),
        "may_act": may_act(request.user, batch),
        "may_label": sample is not None and selectors.may_label(request.user, sample),
        "draw_form": forms.get("draw_form") or DrawForm(),
        "import_form": forms.get("import_form") or ImportForm(),
        "trust_form": forms.get("trust_form") or TrustForm(),
    }
    return render(request, "annotation/audit/sample.html", context, status=status)


@login_required
def audit_page(request: HttpRequest, name: str) -> HttpResponse:
    return _page(request, selectors.readable_batch(request.user, name))


def _act(request: HttpRequest, batch: Batch, form, key: str, act, refused=(ServiceError,)) -> HttpResponse:
    """``act(cleaned data)`` for a valid ``form``, its message shown on the audit page; else the page again
    with the form (``key``) and its errors, a refusal among them."""
    if form.is_valid():
        try:
            message = act(form.cleaned_data)
        except refused as exc:
            add_service_error(form, exc)
        else:
            messages.success(request, message)
            return redirect("annotation:batch-audit", name=batch.name)
    return _page(request, batch, status=400, **{key: form})


@login_required
@require_POST
def audit_draw(request: HttpRequest, name: str) -> HttpResponse:
    batch = selectors.readable_batch(request.user, name)

    def draw(data) -> str:
        size, seed, share = data["size"], data["seed"], data["expected_share"]
        sample = draw_audit_sample(batch, by=request.user, size=size, seed=seed, expected_share=share)
        return f"Audit sample of {sample.size} queries drawn (seed {sample.seed})."

    return _act(request, batch, DrawForm(request.POST), "draw_form", draw)


@login_required
@staged_uploads
@require_POST
def audit_import(request: HttpRequest, name: str) -> HttpResponse:
    batch = selectors.readable_batch(request.user, name)

    def load(data) -> str:
        upload = data["file"]
        changed = import_audit_labels(batch, upload.staged_path, by=request.user, name=upload.name)
        return f"{changed} expert label{'s' if changed != 1 else ''} imported."

    form = ImportForm(request.POST, request.FILES)
    return _act(request, batch, form, "import_form", load, refused=(ServiceError, ValueError))


@login_required
@require_POST
def audit_trust(request: HttpRequest, name: str) -> HttpResponse:
    batch = selectors.readable_batch(request.user, name)

    def trust(data) -> str:
        trust_labeller(batch, data["username"], by=request.user, trusted=not data["remove"])
        what = "no longer trusted" if data["remove"] else "trusted to label the audit sample"
        return f"{data['username']} is {what}."

    return _act(request, batch, TrustForm(request.POST), "trust_form", trust)


@login_required
def audit_label(request: HttpRequest, name: str) -> HttpResponse:
    """One audited query (``?i=`` its draw index; else the next unlabelled), blind; POST ``index`` and ``label``."""
    batch = selectors.readable_batch(request.user, name)
    sample = selectors.audit_sample(batch)
    if sample is None:
        messages.info(request, "No audit sample yet: draw one first.")
        return redirect("annotation:batch-audit", name=batch.name)
    if not selectors.may_label(request.user, sample):
        raise PermissionDenied("Only the batch's researchers and the labellers they trust label its audit sample.")
    error, status = "", 200
    if request.method == "POST":
        item = _item(batch, request.POST.get("index"))
        if item is None:
            error, status = "That query is not in the audit sample.", 400
        else:
            try:
                label_audit_query(batch, item.batch_query.qid, request.POST.get("label", ""), by=request.user)
            except ServiceError as exc:
                error, status = str(exc), 400
            else:
                following = selectors.next_to_label(batch, after=item.draw_index)
                if following is None:
                    messages.success(request, "Every query of the audit sample is labelled.")
                    return redirect("annotation:batch-audit", name=batch.name)
                return redirect(f"{request.path}?i={following.draw_index}")
    else:
        item = _item(batch, request.GET.get("i")) if request.GET.get("i") else selectors.next_to_label(batch)
        if item is None:
            if request.GET.get("i"):
                error, status = "That query is not in the audit sample.", 404
            else:
                messages.info(request, "Every query of the audit sample is labelled.")
                return redirect("annotation:batch-audit", name=batch.name)
    progress = selectors.audit_progress(batch)
    context = {
        "batch": batch,
        "item": item,
        "progress": progress,
        "categories": CATEGORIES,
        "error": error,
        "previous": item.draw_index - 1 if item is not None and item.draw_index > 0 else None,
        "next": item.draw_index + 1 if item is not None and item.draw_index + 1 < progress["size"] else None,
    }
    return render(request, "annotation/audit/label.html", context, status=status)


def _item(batch: Batch, index: str | None):
    try:
        return selectors.audit_item(batch, int(index or ""))
    except ValueError:
        return None

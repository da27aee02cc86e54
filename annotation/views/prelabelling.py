"""Researchers' pages of machine pre-labelling: the machine's labels, their calibration, routing.

- ``/batches/<name>/machine/``: pre-label (a background job), each stored run, the chat
  labeller's prompt, the blind calibration sample (created and published from here);
- ``/batches/<name>/calibration/``: the machine against the crowd on that sample, with its
  plots; it refreshes itself while the sample is being answered;
- ``/batches/<name>/routing/``: the routing plan previewed by GET (nothing is created), then
  confirmed by POST, which records it and publishes the routed queries.

Thin shells over :mod:`annotation.services` (prelabels, calibration, routing, background),
as :mod:`.researcher`: researchers only, a refusal is a message on the page, never a 500.
The two figures are drawn with matplotlib's object API (never pyplot) and inlined as SVG in
the page's foreground colour (:mod:`metrics.plots`' mechanism), so they follow dark mode.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.db.models import Avg, Count, Max
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_POST

from core.errors import ServiceError
from core.permissions import researcher_required
from core.uploads import staged_uploads

from ..forms import CalibrationSampleForm, PrelabelForm, RoutingForm, openai_configured
from ..labels import LABEL_NAMES, LABELS
from ..models import Batch, PreLabel
from ..prelabellers import openai_chat
from ..services.background import start_prelabel, start_publish
from ..services.calibration import calibration_batch, calibration_report, create_calibration_sample, identities
from ..services.routing import latest_routing, plan_routing, route_batch

# --- reads shared by the pages and the API ---------------------------------------------------


def prelabel_runs(batch: Batch) -> list[dict[str, Any]]:
    """Each stored run of ``batch`` (one per labeller, model and prompt version), the latest first:
    counts per label, labelled queries, mean confidence, the trained labeller's cross-validated
    accuracy (from ``PreLabel.detail``) and when it was stored."""
    rows = (
        PreLabel.objects.filter(batch_query__batch=batch)
        .values("labeller", "model", "prompt_version", "label")
        .annotate(count=Count("id"), mean=Avg("confidence"), latest=Max("created"))
        .order_by()
    )
    runs: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        key = (row["labeller"], row["model"], row["prompt_version"])
        run = runs.setdefault(
            key,
            {
                "labeller": key[0],
                "model": key[1],
                "prompt_version": key[2],
                "counts": dict.fromkeys(LABELS, 0),
                "labelled": 0,
                "mean_confidence": 0.0,
                "cv_accuracy": None,
                "created": row["latest"],
            },
        )
        run["counts"][row["label"]] = row["count"]
        run["labelled"] += row["count"]
        run["mean_confidence"] += row["mean"] * row["count"]
        run["created"] = max(run["created"], row["latest"])
    for (labeller, model, prompt_version), run in runs.items():
        run["mean_confidence"] = run["mean_confidence"] / run["labelled"] if run["labelled"] else None
        cv = (
            PreLabel.objects.filter(
                batch_query__batch=batch, labeller=labeller, model=model, prompt_version=prompt_version
            )
            .filter(detail__cv_accuracy__isnull=False)
            .values_list("detail__cv_accuracy", flat=True)
            .first()
        )
        run["cv_accuracy"] = cv
    return sorted(runs.values(), key=lambda run: run["created"], reverse=True)


def chat_prompt() -> dict[str, str]:
    """The chat labeller's prompt as it is sent, and its version (see :mod:`annotation.prelabellers.openai_chat`)."""
    return {
        "version": openai_chat.PROMPT_VERSION,
        "system": openai_chat.SYSTEM_PROMPT,
        "user": openai_chat.USER_TEMPLATE,
        "sha256": openai_chat.PROMPT_SHA256,
    }


# --- figures --------------------------------------------------------------------------------


def _inline(figure) -> SafeString:
    """The figure as inline SVG: text and axes in ``currentColor``, the page's foreground colour.

    :func:`metrics.plots._svg` adds a ``<style>`` for an SVG shown as an ``<img>``; inline, the
    SVG inherits the page's colour (dark mode included), so the style and XML prolog are dropped.
    """
    from metrics.plots import SVG_STYLE, _svg

    text = _svg(figure).decode("utf-8").replace(SVG_STYLE, "")
    return mark_safe(text[text.index("<svg") :])  # drawn here by matplotlib: no user text


def reliability_svg(reliability: list[dict[str, float]]) -> SafeString:
    """The reliability diagram: per confidence bin, how often the machine was right, against the diagonal."""
    from matplotlib.figure import Figure

    from metrics.plots import INK, PALETTE, _ink

    figure = Figure(figsize=(3.7, 3.2), layout="constrained")
    axes = figure.add_subplot()
    axes.plot([0, 1], [0, 1], color=INK, linewidth=0.8, alpha=0.6, linestyle="--", label="perfectly calibrated")
    for b in reliability:
        axes.bar(
            (b["low"] + b["high"]) / 2, b["accuracy"], width=(b["high"] - b["low"]) * 0.9,
            color=PALETTE[0], alpha=0.75,
        )  # fmt: skip
    if reliability:
        axes.plot(
            [b["confidence"] for b in reliability], [b["accuracy"] for b in reliability],
            marker="o", markersize=4, color=PALETTE[1], linewidth=1.2, label="mean confidence of a bin",
        )  # fmt: skip
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1)
    axes.set_title("Reliability", fontsize=11)
    axes.set_xlabel("machine's confidence", fontsize=9)
    axes.set_ylabel("share right (crowd's label)", fontsize=9)
    _ink(axes)
    legend = axes.legend(loc="upper left", fontsize=8, frameon=False)
    for text in legend.get_texts():
        text.set_color(INK)
    return _inline(figure)


def proportions_svg(proportions: dict[str, dict[str, Any]]) -> SafeString:
    """Each category's share of the batch: the PPI++ estimate with its CI, and the machine's share alone."""
    from matplotlib.figure import Figure

    from metrics.plots import INK, PALETTE, _ink

    figure = Figure(figsize=(3.9, 3.0), layout="constrained")
    axes = figure.add_subplot()
    y = list(range(len(LABELS)))[::-1]
    for row, label in zip(y, LABELS, strict=True):
        p = proportions.get(label) or {}
        if p.get("estimate") is not None:
            ci = p.get("ci") or [p["estimate"], p["estimate"]]
            axes.errorbar(
                [p["estimate"]], [row + 0.1], xerr=[[max(0.0, p["estimate"] - ci[0])], [max(0.0, ci[1] - p["estimate"])]],
                fmt="o", markersize=5, capsize=3, color=PALETTE[0], label="PPI++ estimate, 95% CI" if row == y[0] else None,
            )  # fmt: skip
        if p.get("machine_only") is not None:
            axes.plot(
                [p["machine_only"]], [row - 0.1], marker="x", linestyle="", markersize=6, color=PALETTE[1],
                label="machine alone" if row == y[0] else None,
            )  # fmt: skip
    axes.set_yticks(y, [LABEL_NAMES[label].split(" ")[0] for label in LABELS])
    axes.set_xlim(0, 1)
    axes.set_ylim(-0.6, len(LABELS) - 0.4)
    axes.set_title("Share of the batch", fontsize=11)
    axes.set_xlabel("share of the batch's queries", fontsize=9)
    _ink(axes)
    legend = figure.legend(loc="outside lower center", ncols=2, fontsize=8, frameon=False)
    for text in legend.get_texts():
        text.set_color(INK)
    return _inline(figure)


# --- the machine-labels page ------------------------------------------------------------------


def _machine_context(batch: Batch, **forms: Any) -> dict[str, Any]:
    sample = calibration_batch(batch)
    runs = prelabel_runs(batch)
    for run in runs:
        run["rows"] = [(LABEL_NAMES[code], run["counts"][code]) for code in LABELS]
    return {
        "batch": batch,
        "runs": runs,
        "label_names": [LABEL_NAMES[code] for code in LABELS],
        "prelabel_form": forms.get("prelabel_form") or PrelabelForm(batch=batch),
        "calibration_form": forms.get("calibration_form")
        or CalibrationSampleForm(labellers=[i.labeller for i in identities(batch)]),
        "routing_form": RoutingForm(),
        "openai_ready": openai_configured(),
        "openai": {
            "url": settings.PRELABEL_API_URL,
            "model": settings.PRELABEL_MODEL,
            "samples": settings.PRELABEL_SAMPLES,
            "temperature": settings.PRELABEL_TEMPERATURE,
            "concurrency": settings.PRELABEL_CONCURRENCY,
            "prompt_price": settings.PRELABEL_PROMPT_PRICE,
            "completion_price": settings.PRELABEL_COMPLETION_PRICE,
            "key_set": bool(settings.PRELABEL_API_KEY),
        },
        "prompt": chat_prompt(),
        "sample": sample,
        "routing": latest_routing(batch),
    }


@researcher_required
def batch_machine(request: HttpRequest, name: str) -> HttpResponse:
    """Pre-label the batch, see each run and the chat prompt, draw the calibration sample."""
    batch = get_object_or_404(Batch.objects.select_related("parent"), name=name)
    return render(request, "annotation/prelabelling/machine.html", _machine_context(batch))


@researcher_required
@staged_uploads
@require_POST
def batch_prelabel(request: HttpRequest, name: str) -> HttpResponse:
    """Start pre-labelling as a job and follow it on the job's page (the form again when refused)."""
    batch = get_object_or_404(Batch, name=name)
    files = request.FILES  # parsing the body sets upload_too_large
    form = PrelabelForm(request.POST, files, batch=batch, too_large=getattr(request, "upload_too_large", None))
    if form.is_valid():
        data = form.cleaned_data
        try:
            job = start_prelabel(batch, data["labeller"], samples=data.get("samples"), train=form.train_source())
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("core:job-detail", pk=job.pk)
    context = _machine_context(batch, prelabel_form=form)
    return render(request, "annotation/prelabelling/machine.html", context, status=400)


@researcher_required
@require_POST
def batch_calibration_sample(request: HttpRequest, name: str) -> HttpResponse:
    """Draw the blind calibration sample as a batch of its own and start publishing it."""
    batch = get_object_or_404(Batch, name=name)
    form = CalibrationSampleForm(request.POST, labellers=[i.labeller for i in identities(batch)])
    if form.is_valid():
        data = form.cleaned_data
        try:
            child = create_calibration_sample(
                batch, data["sample"], labeller=data["labeller"] or None, seed=data["seed"] or 0
            )
            job = start_publish(child) if data["publish"] else None
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            sampled = len(child.derivation["stratum_of"])
            publishing = f" Publishing it: job {job.pk}." if job else " Publish it from its page when ready."
            messages.success(request, f"Calibration sample {child.name} created ({sampled} queries).{publishing}")
            return redirect("annotation:batch-machine", name=batch.name)
    context = _machine_context(batch, calibration_form=form)
    return render(request, "annotation/prelabelling/machine.html", context, status=400)


# --- the calibration report -------------------------------------------------------------------


def _calibration_context(batch: Batch) -> dict[str, Any]:
    """The report with its tables and figures, or why there is none yet (``waiting``)."""
    sample = calibration_batch(batch)
    context: dict[str, Any] = {"batch": batch, "sample": sample, "report": None, "waiting": None}
    try:
        report = calibration_report(batch)
    except ServiceError as exc:
        context["waiting"] = str(exc)
    else:
        names = [LABEL_NAMES[code] for code in LABELS]
        per_category = report["per_category"]
        proportions = report["proportions"]
        context |= {
            "report": report,
            "label_names": names,
            "per_category": [(LABEL_NAMES[code], per_category.get(code, {})) for code in LABELS],
            "confusion": [
                (LABEL_NAMES[code], row)
                for code, row in zip(report.get("labels", LABELS), report["confusion"], strict=True)
            ],
            "proportions": [(LABEL_NAMES[code], proportions.get(code, {})) for code in LABELS],
            "reliability_svg": reliability_svg(report.get("reliability") or []),
            "proportions_svg": proportions_svg(proportions),
        }
    # The sample is still being answered: the page polls itself until its crowd work is in.
    context["live"] = sample is not None and sample.status == Batch.Status.PUBLISHED
    return context


@researcher_required
def batch_calibration(request: HttpRequest, name: str) -> HttpResponse:
    batch = get_object_or_404(Batch, name=name)
    return render(request, "annotation/prelabelling/calibration.html", _calibration_context(batch))


@researcher_required
def batch_calibration_live(request: HttpRequest, name: str) -> HttpResponse:
    """The report's live part (htmx polls it while the calibration sample is published)."""
    batch = get_object_or_404(Batch, name=name)
    return render(request, "annotation/prelabelling/_calibration_report.html", _calibration_context(batch))


# --- routing ----------------------------------------------------------------------------------


def _routing_arguments(form: RoutingForm) -> dict[str, Any]:
    data = form.cleaned_data
    return {"budget": data.get("budget"), "conservative": bool(data.get("conservative"))}


@researcher_required
def batch_routing(request: HttpRequest, name: str) -> HttpResponse:
    """GET with the form's fields: the plan, nothing created. POST: route and publish the routed queries."""
    batch = get_object_or_404(Batch, name=name)
    plan = None
    status = 200
    if request.method == "POST":
        form = RoutingForm(request.POST)
        if form.is_valid():
            try:
                routing = route_batch(batch, form.cleaned_data["target_accuracy"], **_routing_arguments(form))
                job = start_publish(routing.routed_batch) if routing.routed_batch else None
            except ServiceError as exc:
                form.add_error(None, str(exc))
            else:
                sent = f"{routing.to_humans} queries to the crowd in {routing.routed_batch.name}" if job else "none"
                publishing = f" Publishing them: job {job.pk}." if job else ""
                messages.success(request, f"Routed: {len(routing.accepted)} machine-accepted, {sent}.{publishing}")
                return redirect("annotation:batch-routing", name=batch.name)
        status = 400
    else:
        form = RoutingForm(request.GET or None)
        if form.is_bound:
            if form.is_valid():
                try:
                    plan = plan_routing(batch, form.cleaned_data["target_accuracy"], **_routing_arguments(form))
                except ServiceError as exc:
                    form.add_error(None, str(exc))
            if form.errors:
                status = 400
    context = {
        "batch": batch,
        "form": form,
        "plan": plan,
        "routing": latest_routing(batch),
        "sample": calibration_batch(batch),
        "calibration_url": reverse("annotation:batch-calibration", args=[batch.name]),
    }
    return render(request, "annotation/prelabelling/routing.html", context, status=status)

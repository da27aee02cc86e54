"""Researchers' pages of machine pre-labelling: ``/batches/<name>/machine/`` (pre-label, the runs, the
chat prompt, the calibration sample), ``/batches/<name>/calibration/`` (the report, computed by a job,
refreshing itself while the sample is answered) and ``/batches/<name>/routing/`` (previewed by GET,
confirmed by POST). Thin shells: a refusal is a message on the page, never a 500.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from annotation.crowd.selectors import query_texts
from annotation.crowd.services.background import start_publish
from annotation.machine.forms import CalibrationSampleForm, PrelabelForm, RoutingForm
from annotation.machine.selectors import calibration_batch, identities, prelabel_runs
from annotation.machine.services.background import report_or_job
from annotation.machine.services.calibration import create_calibration_sample
from annotation.machine.services.echo import hold_out_again, restore_echo_worker
from annotation.machine.services.prelabels import cached_answers, clear_answer_cache, prelabel_settings, prompt_in_force
from annotation.machine.services.routing import (
    DEFAULT_RISK,
    guarantee_text,
    plan_routing,
    plan_summary,
    route_and_publish,
    routing_request,
)
from annotation.models import Batch
from annotation.results.selectors.labels import latest_routing
from core import methods
from core.errors import ServiceError
from core.forms import add_service_error
from core.selectors import UNSET, connection_state
from core.services.uploads import staged_uploads
from core.templatetags.roles import may_act
from core.web.permissions import researcher_required
from genderbias.labels import LABEL_NAMES, LABELS


def chat_prompt() -> dict[str, str]:
    """The chat labeller's prompt in force (``PRELABEL_PROMPT_FILE`` or the built-in one) and its version."""
    try:
        prompt = prompt_in_force()
    except ServiceError as exc:
        return {"error": str(exc)}
    return asdict(prompt) | {"sha256": prompt.sha256, "file": settings.PRELABEL_PROMPT_FILE}


def _machine_context(batch: Batch, **forms: Any) -> dict[str, Any]:
    runs = prelabel_runs(batch)
    chat = connection_state("chat")  # the connection in force (core.selectors.chat_settings' source)
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
        "openai_ready": chat.configured,
        "openai": prelabel_settings(
            "samples max_samples top_logprobs temperature concurrency prompt_price completion_price timeout "
            "call_deadline job_deadline"
        )
        | {
            "url": chat.value("api_url"),
            "model": chat.value("model"),
            "budget": settings.PRELABEL_SAMPLE_BUDGET,
            "key_set": any(f.spec.secret and f.source != UNSET for f in chat.fields),
            "max_bytes": settings.PRELABEL_MAX_RESPONSE_BYTES,
            "max_failures": settings.PRELABEL_MAX_CONSECUTIVE_FAILURES,
        },
        "cached": cached_answers(),
        "prompt": chat_prompt(),
        "sample": calibration_batch(batch),
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
        try:
            job = form.start()
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect("core:job-detail", pk=job.pk)
    context = _machine_context(batch, prelabel_form=form)
    return render(request, "annotation/prelabelling/machine.html", context, status=400)


@researcher_required
@require_POST
def batch_prelabel_cache(request: HttpRequest, name: str) -> HttpResponse:
    """Clear a model's cached chat answers (all batches share them), then back to the machine page."""
    batch = get_object_or_404(Batch, name=name)
    model = request.POST.get("model", "").strip()
    version = request.POST.get("prompt_version", "").strip() or None
    try:
        deleted = clear_answer_cache(model, version)
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        of = f"{model} ({version})" if version else model
        messages.success(
            request, f"Forgot the cached answers to {deleted} quer{'y' if deleted == 1 else 'ies'} of {of}."
        )
    return redirect(reverse("annotation:batch-machine", args=[batch.name]) + "#cache")


@researcher_required
@require_POST
def batch_calibration_sample(request: HttpRequest, name: str) -> HttpResponse:
    """Draw the blind calibration sample (or, with ``extend``, more of it) and start publishing it."""
    batch = get_object_or_404(Batch, name=name)
    form = CalibrationSampleForm(request.POST, labellers=[i.labeller for i in identities(batch)])
    extend = request.POST.get("extend") in ("on", "true", "1")
    if form.is_valid():
        data = form.cleaned_data
        try:
            with transaction.atomic():  # a publishing job that cannot start leaves no sample behind
                child = create_calibration_sample(
                    batch,
                    data["sample"],
                    labeller=data["labeller"] or None,
                    seed=data["seed"] or 0,
                    extend=extend,
                    extendable=data["extendable"],
                    escalation_cap=data["escalation_cap"],
                    until=data["until"] or "majority",
                )
                job = start_publish(child) if data["publish"] else None
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            sampled = len(child.derivation["stratum_of"])
            publishing = f" Publishing it: job {job.pk}." if job else " Publish it from its page when ready."
            what = "Extension" if extend else "Calibration sample"
            messages.success(request, f"{what} {child.name} created ({sampled} queries).{publishing}")
            return redirect("annotation:batch-machine", name=batch.name)
    context = _machine_context(batch, calibration_form=form)
    return render(request, "annotation/prelabelling/machine.html", context, status=400)


def _calibration_context(request: HttpRequest, batch: Batch) -> dict[str, Any]:
    """The report with its tables and figures, or why there is none yet (``waiting``), or its ``job``."""
    sample = calibration_batch(batch)
    context: dict[str, Any] = {"batch": batch, "sample": sample, "report": None, "waiting": None, "job": None}
    # The sample is still being answered: the page polls itself until its crowd work is in.
    context["live"] = sample is not None and sample.status == Batch.Status.PUBLISHED
    try:
        figures, job = report_or_job(batch, may_start=may_act(request.user, batch))
    except ServiceError as exc:
        return context | {"waiting": str(exc)}
    if figures is None:  # polling until the job is done
        return context | {"job": job, "percent": round(100 * (job.fraction or 0.0)), "polling": True}
    report = figures["report"]
    truth = report.get("against_truth") or {}
    vote = truth.get("vote") or {}  # true label -> given label -> probability
    # numpy's modules: not loaded as the URLconf loads this view
    from genderbias.crowd.reliability import quality_sentence  # start-up
    from genderbias.crowd.shared_errors import shared_errors_sentence  # start-up

    return context | {
        "report": report,
        "label_names": [LABEL_NAMES[code] for code in LABELS],
        "per_category": [(LABEL_NAMES[code], report["per_category"].get(code, {})) for code in LABELS],
        "confusion": [
            (LABEL_NAMES[code], row)
            for code, row in zip(report.get("labels", LABELS), report["confusion"], strict=True)
        ],
        "proportions": [(LABEL_NAMES[code], report["proportions"].get(code, {})) for code in LABELS],
        "crowd_vote": [(LABEL_NAMES[code], [vote[code][given] for given in LABELS]) for code in LABELS if code in vote],
        "shared_errors": shared_errors_sentence(truth.get("shared_errors")),
        "denoised_quality": quality_sentence(truth.get("quality")),
        "reliability_svg": mark_safe(figures["reliability_svg"]),  # drawn by matplotlib: no user text
        "proportions_svg": mark_safe(figures["proportions_svg"]),
        "methods_used": _methods_used(figures.get("methods")),
    }


def _methods_used(stored: dict[str, str] | None) -> dict[str, str]:
    """The methods that computed the report (kept with it), in their own words; today's if it predates them."""
    stored = stored or methods.current()
    return {name: methods.describe(name, stored.get(name)) for name in methods.USED_BY["calibration"]}


@researcher_required
def batch_calibration(request: HttpRequest, name: str) -> HttpResponse:
    batch = get_object_or_404(Batch, name=name)
    return render(request, "annotation/prelabelling/calibration.html", _calibration_context(request, batch))


@researcher_required
def batch_calibration_live(request: HttpRequest, name: str) -> HttpResponse:
    """The report's live part (htmx polls it while the calibration sample is published or its report is computed)."""
    batch = get_object_or_404(Batch, name=name)
    return render(request, "annotation/prelabelling/_calibration_report.html", _calibration_context(request, batch))


@researcher_required
@require_POST
def batch_calibration_echo(request: HttpRequest, name: str) -> HttpResponse:
    """Restore a worker the echo check flagged (``restore=1``, with ``reason``), or hold them out again (``restore=0``)."""
    batch = get_object_or_404(Batch, name=name)
    worker, restore = request.POST.get("worker", ""), request.POST.get("restore")
    try:
        if restore == "1":
            restore_echo_worker(batch, worker, by=request.user, reason=request.POST.get("reason", ""))
            messages.success(request, f"{worker}'s sample answers count in the reference again.")
        elif restore == "0":
            hold_out_again(batch, worker)
            messages.success(request, f"{worker}'s sample answers are held out of the reference again.")
        else:
            messages.error(request, "restore: send 1 to restore the worker or 0 to hold them out again.")
    except ServiceError as exc:
        messages.error(request, str(exc))
    return redirect(reverse("annotation:batch-calibration", args=[batch.name]) + "#echo")


@researcher_required
def batch_routing(request: HttpRequest, name: str) -> HttpResponse:
    """GET with the form's fields: the plan, nothing created. POST: route and publish the routed queries."""
    batch = get_object_or_404(Batch, name=name)
    posted = request.method == "POST"
    data = request.POST if posted else request.GET.copy() or None
    if data is not None and not posted:
        data.setdefault("risk", str(DEFAULT_RISK))  # shown as used, not as an empty box
    form, plan = RoutingForm(data), None
    if form.is_bound and form.is_valid():
        try:  # the rules checked there
            done = (route_and_publish if posted else plan_routing)(batch, **routing_request(form.cleaned_data))
        except ServiceError as exc:
            add_service_error(form, exc)
        else:
            if not posted:
                plan = done
            else:
                routing, job = done.routing, done.job
                sent = f"{routing.to_humans} queries to the crowd in {routing.routed_batch.name}" if job else "none"
                publishing = f" Publishing them: job {job.pk}." if job else ""
                messages.success(request, f"Routed: {len(routing.accepted)} machine-accepted, {sent}.{publishing}")
                return redirect("annotation:batch-routing", name=batch.name)
    routing = latest_routing(batch)
    unlabelled = plan.over_budget[:20] if plan else []  # the first queries left unlabelled, each with its text
    texts = query_texts(batch, unlabelled)
    context = {
        "batch": batch,
        "form": form,
        "plan": plan,
        "summary": plan_summary(plan) if plan else [],
        "over_budget": [(qid, texts.get(qid, "")) for qid in unlabelled],
        "routing": routing,
        "routed_live": routing is not None and routing.routed_batch is not None,
        "guarantee": guarantee_text(routing.risk, routing.target_accuracy) if routing and routing.risk else "",
        "sample": calibration_batch(batch),
        "calibration_url": reverse("annotation:batch-calibration", args=[batch.name]),
    }
    return render(request, "annotation/prelabelling/routing.html", context, status=400 if form.errors else 200)

"""In-house annotators' pages: the next HIT, the training step, and the HIT page.

Annotators (the ``annotators`` group) answer HITs one after the other and only ever see
their own assignment; :func:`training_step` is shared with Prolific participants.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import BooleanField, ExpressionWrapper
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from core.errors import ServiceError

from .. import services
from ..forms import HitAnswerForm, TrainingAnswerForm
from ..models import Assignment, Batch, Provider
from ..services.local import (
    NotAnnotator,
    NotOpenToWorker,
    annotator_worker,
    answered_and_progress,
    in_annotators,
    next_hit_for,
)
from ..services.publishing import CATEGORIES
from ..services.team_access import assignment_open, open_to
from ..services.training import qualification_of, submit_training


@login_required
def next_hit(request: HttpRequest) -> HttpResponse:
    """Send an annotator to their training step, the HIT they are on, or a new one."""
    try:
        step = next_hit_for(request.user)
    except NotAnnotator as exc:
        raise PermissionDenied(str(exc)) from None
    if step.training is not None:
        return redirect("annotation:training", name=step.training.name)
    if step.assignment is None:
        return render(request, "annotation/no_more_hits.html", status=200)
    return redirect("annotation:assignment", pk=step.assignment.pk)


@login_required
def training_page(request: HttpRequest, name: str) -> HttpResponse:
    """The batch's qualification step for an in-house annotator: the shared HIT page, then the result.

    Only for a batch open to them (team_access): to anyone else its training queries and their
    answer key are as unknown as its HITs (404, the answer for a batch that does not exist).
    """
    worker = annotator_worker(request.user)
    if worker is None:
        raise PermissionDenied("Only annotators take the training.")
    batches = Batch.objects.filter(provider=Provider.LOCAL, status=Batch.Status.PUBLISHED).filter(open_to(worker))
    batch = get_object_or_404(batches, name=name)
    return training_step(request, batch, worker, mode="local", continue_url=reverse("annotation:next"))


def training_step(request: HttpRequest, batch: Batch, worker, *, mode: str, continue_url: str) -> HttpResponse:
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
    """One HIT for its annotator: the shared HIT page, posting back here.

    Only while they are an annotator: one taken out of the annotators group is refused the
    HIT they held (it went back to the queue: ``accounts``), as the next-HIT page refuses them.
    """
    # Whether they are still an annotator, and its batch still open to them (team_access), is
    # read with it, in the same query.
    mine = Assignment.objects.select_related("hit__batch").annotate(
        open=ExpressionWrapper(assignment_open(), output_field=BooleanField()),
        annotator=in_annotators(request.user.pk),
    )
    assignment = get_object_or_404(mine, pk=pk, worker__identity__user=request.user)
    if not assignment.annotator:
        raise PermissionDenied("Only annotators answer HITs.")
    if assignment.status not in (Assignment.Status.ASSIGNED, Assignment.Status.ABANDONED):
        messages.info(request, "You already submitted that HIT.")
        return redirect("annotation:next")
    if not assignment.open:  # they left its team: the HIT went back to the queue
        messages.error(
            request, f"Batch {assignment.hit.batch.name} is no longer open to you (you are not on its team)."
        )
        return redirect("annotation:batch-list")
    hit = assignment.hit
    hit_queries = list(hit.hit_queries.select_related("batch_query").order_by("position"))
    action = reverse("annotation:assignment", args=[assignment.pk])
    if request.method == "POST":
        form = HitAnswerForm(hit_queries, request.POST)
        if form.is_valid():
            try:
                check = services.submit_local_assignment(
                    assignment, form.cleaned_data, hit_queries=hit_queries, count_answered=True, current=True
                )
            except NotAnnotator as exc:  # taken out of the group between the read above and the write
                raise PermissionDenied(str(exc)) from None
            except NotOpenToWorker as exc:  # shown at once on their home page (the HIT page shows no messages)
                messages.error(request, str(exc))
                return redirect("annotation:batch-list")
            except ServiceError as exc:
                messages.error(request, str(exc))
            else:
                if check.gold_passed is False:
                    # Shown on the annotator's home page (the HIT page is self-contained and shows
                    # no messages), from where "Start annotating" continues with the next HIT.
                    messages.warning(request, f"This HIT will not count: {assignment.feedback}")
                    return redirect("annotation:batch-list")
                count = check.answered_count
                messages.success(
                    request,
                    f"Thank you: your answers to HIT {hit.position} of {hit.batch.name} were recorded. "
                    f"You have submitted {count} HIT{'s' if count != 1 else ''}.",
                )
            return redirect("annotation:next")
        context = unanswered_context(request, hit, form, mode="local", action=action, hit_queries=hit_queries)
        context["answered_count"], context["progress"] = answered_and_progress(assignment)
        return render(request, "annotation/hit.html", context, status=400)
    context = services.hit_page_context(hit, mode="local", action=action, hit_queries=hit_queries)
    context["answered_count"], context["progress"] = answered_and_progress(assignment)
    return render(request, "annotation/hit.html", context)


def unanswered_context(request: HttpRequest, hit, form, *, mode: str, action: str, hit_queries) -> dict:
    """The HIT page again after a submit with queries left unanswered: the choices kept, errors beside them."""
    return services.hit_page_context(
        hit,
        mode=mode,
        action=action,
        answers={k: v for k, v in request.POST.items() if k.startswith("q-")},
        errors=form.field_errors(),
        hit_queries=hit_queries,
    )

"""Prolific participants' pages: arrival from the study link (confirmed with Prolific), training, HIT.

No account is needed: a participant's browser session holds the assignments it was given
(see ``annotation.prolific.services`` for how an arrival is confirmed).
"""

from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied
from django.db import OperationalError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from annotation.crowd.forms import HitAnswerForm
from annotation.crowd.services.pseudonyms import worker_for
from annotation.crowd.services.publishing import hit_page_context
from annotation.inhouse.services.handout import submit_local_assignment
from annotation.inhouse.views import training_step, unanswered_context
from annotation.models import Assignment, Batch, Provider
from annotation.quality.services.training import qualification_of
from core.errors import ServiceError

logger = logging.getLogger(__name__)

#: Session key listing the assignments this browser was given from Prolific (no account needed).
PROLIFIC_SESSION_KEY = "prolific_assignments"
PROLIFIC_TRAINING_KEY = "prolific_training"
#: A random secret of this browser: the Prolific sessions it opens are bound to it.
PROLIFIC_BROWSER_KEY = "prolific_browser"


def _prolific_page(
    request: HttpRequest, message: str, status: int, *, return_link: bool = False, retry_after: int = 0
) -> HttpResponse:
    from annotation.crowd.providers.prolific import return_url

    context = {"message": message, "return_url": return_url() if return_link else ""}
    if status in (429, 503):
        context["heading"] = "Please try again in a minute"
    response = render(request, "annotation/no_more_hits.html", context, status=status)
    if retry_after:
        response["Retry-After"] = str(retry_after)
    return response


def prolific_start(request: HttpRequest, name: str) -> HttpResponse:
    """Where the Prolific study URL leads: confirm the session with Prolific, then hand the participant a HIT.

    Anyone can open it, so each client address (an IPv6 client's /64) has a few arrivals a
    minute (a friendly 429 page past them), a malformed link is refused at once, and confirming takes at most one short call to Prolific
    (:func:`annotation.prolific.services.verify_arrival`).
    """
    import secrets

    from django.conf import settings

    from annotation.crowd.providers.prolific import RETURN_MESSAGE
    from annotation.prolific import services as prolific
    from core.services.ratelimit import client_key, over_limit
    from core.web.client_ip import client_ip

    client = client_key(client_ip(request))  # an IPv6 client's /64: one subscriber, however many addresses
    try:
        wait = over_limit(f"prolific-arrivals:{client}", settings.PROLIFIC_ARRIVALS_PER_CLIENT_PER_MINUTE)
    except OperationalError:
        logger.exception("arrival at %s deferred: the database was busy", name)
        return _prolific_page(request, prolific.RELOAD_MESSAGE, 503, retry_after=5)
    if wait:
        message = "Too many attempts to open this study from your connection. Please reload this page in a minute."
        return _prolific_page(request, message, 429, retry_after=wait)
    batch = get_object_or_404(Batch, name=name, provider="prolific")
    link = [request.GET.get(key, "") for key in ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")]
    # Kept in the browser's session only once an arrival is confirmed: refused or deferred
    # arrivals (a flood of made-up links) write no session row.
    browser = request.session.get(PROLIFIC_BROWSER_KEY) or secrets.token_urlsafe(32)
    try:
        session = prolific.verify_arrival(batch, *link, browser_secret=browser)
    except prolific.ArrivalDeferred as exc:
        return _prolific_page(request, str(exc), 503, retry_after=exc.retry_after)
    except OperationalError:
        # The shared cache's or the session's database busy past its timeout under a flood
        # (SQLite, many writers at once): the participant reloads in a minute, never a 500.
        logger.exception("arrival at batch %s deferred: the database was busy", batch.name)
        return _prolific_page(request, prolific.RELOAD_MESSAGE, 503, retry_after=5)
    except prolific.StudyClosed as exc:
        return _prolific_page(request, str(exc), 200, return_link=True)
    except prolific.ArrivalRefused as exc:
        return _prolific_page(request, str(exc), 403)
    except ServiceError as exc:
        return _prolific_page(request, str(exc), 400)
    request.session[PROLIFIC_BROWSER_KEY] = browser
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
    return training_step(request, batch, worker_for(Provider.PROLIFIC, link[0]), mode="prolific", continue_url=back)


def prolific_hit(request: HttpRequest, pk: int) -> HttpResponse:
    """The shared HIT page for a Prolific participant; after submitting, back to Prolific with the code."""
    from annotation.crowd.providers.prolific import completion_url

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
                submit_local_assignment(assignment, form.cleaned_data, hit_queries=hit_queries, current=True)
            except ServiceError as exc:
                return render(request, "annotation/no_more_hits.html", {"message": str(exc)}, status=409)
            return redirect(completion_url(hit.batch))
        context = unanswered_context(request, hit, form, mode="prolific", action=action, hit_queries=hit_queries)
        return render(request, "annotation/hit.html", context, status=400)
    context = hit_page_context(hit, mode="prolific", action=action, hit_queries=hit_queries)
    return render(request, "annotation/hit.html", context)

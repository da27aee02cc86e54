"""Prolific participants' pages (arrival, training, HIT): no account, the browser session holds the
assignments it was given."""

from __future__ import annotations

import logging

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db import OperationalError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation.crowd.forms import HitAnswerForm
from annotation.crowd.services.pseudonyms import worker_for
from annotation.crowd.services.publishing import hit_page_context
from annotation.models import Assignment, Batch, Provider
from annotation.quality.services.training import qualification_of
from core.errors import ServiceError
from core.web.permissions import researcher_required
from platforms.inhouse.services.corrections import why_not_correctable
from platforms.inhouse.services.hit_page import submit_local_assignment
from platforms.inhouse.views import correction_step, training_step, unanswered_context
from platforms.prolific import services as prolific
from platforms.prolific.arrivals.services import checks, links
from platforms.prolific.bonuses import services as prolific_bonuses
from platforms.prolific.selectors import rehearsal_study_id

logger = logging.getLogger(__name__)

#: Session key listing the assignments this browser was given from Prolific (no account needed).
PROLIFIC_SESSION_KEY = "prolific_assignments"
PROLIFIC_TRAINING_KEY = "prolific_training"
#: A random secret of this browser: the Prolific sessions it opens are bound to it.
PROLIFIC_BROWSER_KEY = "prolific_browser"
#: The links this browser brought signed by Prolific (verified), by batch: ``{name: [pid, study, session]}``.
PROLIFIC_SIGNED_KEY = "prolific_signed"
#: The rehearsals this browser was let into (a test participant's confirmed link), by batch.
PROLIFIC_REHEARSAL_KEY = "prolific_rehearsal"


def _prolific_page(
    request: HttpRequest,
    message: str,
    status: int,
    *,
    return_link: bool = False,
    retry_after: int = 0,
    heading: str = "",
) -> HttpResponse:
    """A participant's page; with ``retry_after`` one that asks again by itself after that many seconds
    (a meta refresh, no script) and says so in ``Retry-After``."""
    from platforms.prolific.provider import return_url

    context = {
        "message": message,
        "return_url": return_url() if return_link else "",
        "heading": heading,
        "refresh": retry_after,
    }
    response = render(request, "annotation/no_more_hits.html", context, status=status)
    if retry_after:
        response["Retry-After"] = str(retry_after)
    return response


#: The page of a participant the site has no task for: said at once, nothing to wait for.
NO_TASK_MESSAGE = (
    "Every task of this study is taken at the moment, so there is nothing for you to do here, and waiting"
    " will not change that. Please go back to Prolific now with the button below: Prolific will ask you to"
    " return the study, and you will not be penalised. We are sorry for the trouble."
)


def _no_task_page(request: HttpRequest, batch: Batch) -> HttpResponse:
    """No task for this participant: told so at once, and sent back to Prolific to return the study."""
    from platforms.prolific.provider import no_task_url

    context = {
        "heading": "No task for you right now",
        "message": NO_TASK_MESSAGE,
        "continue_url": no_task_url(batch),
        "continue_label": "Back to Prolific",
    }
    return render(request, "annotation/no_more_hits.html", context)


def _waiting_page(request: HttpRequest, deferred, status: int) -> HttpResponse:
    if deferred.checking:
        heading = "Confirming your place with Prolific"
    else:
        heading = "Please wait a moment" if status == 429 else "Waiting for Prolific"
    return _prolific_page(request, str(deferred), status, retry_after=deferred.retry_after, heading=heading)


def prolific_start(request: HttpRequest, name: str) -> HttpResponse:
    """Where the study URL leads: confirm the session with Prolific, then hand the participant a HIT. Until
    Prolific answered, a page that comes back by itself (202 checking, 503 not begun, 429 past the client's
    rate). A signed link's token is checked here with no API call and kept in this browser's session."""
    import secrets

    from core.services.ratelimit import client_key
    from core.web.client_ip import client_ip

    batch = get_object_or_404(Batch, name=name, provider="prolific")
    link = [request.GET.get(key, "") for key in ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID")]
    # Kept in the session only once confirmed: a flood of made-up links writes no session row.
    browser = request.session.get(PROLIFIC_BROWSER_KEY) or secrets.token_urlsafe(32)
    client = client_key(client_ip(request))  # an IPv6 client's /64: one subscriber, however many addresses
    token = request.GET.get("prolific_token", "")
    signed = (request.session.get(PROLIFIC_SIGNED_KEY) or {}).get(batch.name)
    rehearsal = rehearsal_study_id(batch)
    if rehearsal and (link[1] == rehearsal or token):
        rehearsing = _rehearsal_arrival(request, batch, link, token, browser, client)
        if rehearsing is not None:
            return rehearsing
    try:
        if token and links.signed_urls(batch):
            signed = list(links.read_signed_link(batch, token, browser_secret=browser))
            request.session[PROLIFIC_BROWSER_KEY] = browser
            request.session[PROLIFIC_SIGNED_KEY] = {
                **(request.session.get(PROLIFIC_SIGNED_KEY) or {}),
                batch.name: signed,
            }
            return redirect("annotation:prolific-start", name=batch.name)
        if signed and not any(link):
            link = signed
            session = links.admit_signed(batch, *link, browser_secret=browser)
        else:  # a study without signed URLs (or a link without its token): Prolific is asked, as before
            session = links.verify_arrival(batch, *link, browser_secret=browser, client=client)
    except checks.ClientOverLimit as exc:
        return _waiting_page(request, exc, 429)
    except checks.ArrivalDeferred as exc:
        return _waiting_page(request, exc, 202 if exc.checking else 503)
    except OperationalError:
        # The cache's or session's database busy under a flood (SQLite): the page waits, never a 500.
        logger.exception("arrival at batch %s deferred: the database was busy", batch.name)
        return _waiting_page(request, checks.busy(5), 503)
    except checks.StudyClosed as exc:
        return _prolific_page(request, str(exc), 200, return_link=True)
    except checks.ArrivalRefused as exc:
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
        return _no_task_page(request, batch)
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
    back = reverse("annotation:prolific-start", args=[batch.name])
    if (request.session.get(PROLIFIC_SIGNED_KEY) or {}).get(batch.name) != link:  # a signed link: kept in the session
        back += "?" + urlencode(dict(zip(("PROLIFIC_PID", "STUDY_ID", "SESSION_ID"), link, strict=True)))
    return training_step(request, batch, worker_for(Provider.PROLIFIC, link[0]), mode="prolific", continue_url=back)


def prolific_hit(request: HttpRequest, pk: int) -> HttpResponse:
    """The shared HIT page for a Prolific participant; after submitting, back to Prolific with the code."""
    from platforms.prolific.provider import completion_url

    if pk not in request.session.get(PROLIFIC_SESSION_KEY, []):
        raise PermissionDenied("Open this study from Prolific.")
    assignment = get_object_or_404(Assignment.objects.select_related("hit__batch"), pk=pk)
    hit = assignment.hit
    if assignment.status not in (Assignment.Status.ASSIGNED, Assignment.Status.ABANDONED):
        if request.method == "GET" and why_not_correctable(assignment) is None:
            context = {
                "heading": "Your answers were recorded",
                "message": "You can still correct them for a few minutes, or go back to Prolific with your code.",
                "continue_url": completion_url(hit.batch),
                "continue_label": "Back to Prolific",
                "correct_url": reverse("annotation:prolific-correct", args=[assignment.pk]),
            }
            return render(request, "annotation/no_more_hits.html", context)
        return redirect(completion_url(hit.batch))
    hit_queries = list(hit.hit_queries.select_related("batch_query").order_by("position"))
    action = reverse("annotation:prolific-hit", args=[assignment.pk])
    if request.method == "POST":
        form = HitAnswerForm(hit_queries, request.POST)
        if form.is_valid():
            try:
                submit_local_assignment(assignment, form.answers(), hit_queries=hit_queries, current=True)
            except ServiceError as exc:
                return render(request, "annotation/no_more_hits.html", {"message": str(exc)}, status=409)
            return redirect(completion_url(hit.batch))
        context = unanswered_context(request, hit, form, mode="prolific", action=action, hit_queries=hit_queries)
        return render(request, "annotation/hit.html", context, status=400)
    context = hit_page_context(hit, mode="prolific", action=action, hit_queries=hit_queries)
    return render(request, "annotation/hit.html", context)


def prolific_correct(request: HttpRequest, pk: int) -> HttpResponse:
    """A participant corrects the HIT they submitted on this browser; then back to Prolific with the code."""
    from platforms.prolific.provider import completion_url

    if request.method not in ("GET", "POST"):
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    if pk not in request.session.get(PROLIFIC_SESSION_KEY, []):
        raise PermissionDenied("Open this study from Prolific.")
    assignment = get_object_or_404(
        Assignment.objects.select_related("hit__batch", "worker__identity"),
        pk=pk,
        hit__batch__provider=Provider.PROLIFIC,
    )
    return correction_step(request, assignment, mode="prolific", done_url=completion_url(assignment.hit.batch))


# -- rehearsals with Prolific's test participants ---------------------------------------------
def _rehearsal_arrival(request: HttpRequest, batch: Batch, link: list, token: str, browser: str, client: str):
    """A test participant of the batch's test study, checked as any participant, to the rehearsal page;
    ``None`` when the link is not the test study's."""
    try:
        if token and links.signed_urls(batch):
            signed = list(links.read_signed_link(batch, token, browser_secret=browser))
            if signed[1] != rehearsal_study_id(batch):
                return None  # a real study's link: the ordinary path (its token is single-use, so check here)
            link = signed
        elif link[1] == rehearsal_study_id(batch):
            links.confirm_link(*link, client=client)
        else:
            return None
    except checks.ArrivalDeferred as exc:
        return _waiting_page(request, exc, 202 if exc.checking else 503)
    except checks.ArrivalRefused as exc:
        return _prolific_page(request, str(exc), 403)
    except ServiceError as exc:
        return _prolific_page(request, str(exc), 400)
    request.session[PROLIFIC_BROWSER_KEY] = browser
    request.session[PROLIFIC_REHEARSAL_KEY] = {**(request.session.get(PROLIFIC_REHEARSAL_KEY) or {}), batch.name: link}
    return redirect("annotation:prolific-rehearsal", name=batch.name)


def prolific_rehearsal(request: HttpRequest, name: str) -> HttpResponse:
    """The batch's first HIT as a participant sees it; the answers are checked, then dropped."""
    from platforms.prolific.provider import completion_url

    batch = get_object_or_404(Batch, name=name, provider=Provider.PROLIFIC)
    link = (request.session.get(PROLIFIC_REHEARSAL_KEY) or {}).get(batch.name)
    if not link or link[1] != rehearsal_study_id(batch):
        raise PermissionDenied("Open this test study from Prolific.")
    hit = batch.hits.order_by("position").first()
    if hit is None:
        return _prolific_page(request, "This batch has no HIT to rehearse.", 200)
    hit_queries = list(hit.hit_queries.select_related("batch_query").order_by("position"))
    action = reverse("annotation:prolific-rehearsal", args=[batch.name])
    if request.method == "POST":
        form = HitAnswerForm(hit_queries, request.POST)
        if form.is_valid():  # a rehearsal: checked, never stored
            return redirect(completion_url(batch))
        context = unanswered_context(request, hit, form, mode="prolific", action=action, hit_queries=hit_queries)
        return render(request, "annotation/hit.html", context, status=400)
    context = hit_page_context(hit, mode="prolific", action=action, hit_queries=hit_queries)
    return render(request, "annotation/hit.html", context)


@researcher_required
@require_POST
def prolific_rehearse(request: HttpRequest, name: str) -> HttpResponse:
    """Rehearse the batch with Prolific's test participants (or finish the rehearsal), as a background job."""
    from django.contrib import messages

    from platforms.prolific.rehearsal.services import start_rehearsal

    batch = get_object_or_404(Batch, name=name)
    try:
        job = start_rehearsal(
            batch,
            email=request.POST.get("email", "").strip(),
            again=bool(request.POST.get("again")),
            finish=bool(request.POST.get("finish")),
        )
    except ServiceError as exc:
        messages.error(request, str(exc))
        return redirect(f"{reverse('annotation:batch-detail', args=[batch.name])}#rehearsal")
    return redirect("core:job-detail", pk=job.pk)


# -- the batch page's bonus panel's forms ----------------------------------
@researcher_required
@require_POST
def batch_bonus_rule(request: HttpRequest, name: str) -> HttpResponse:
    """Set a Prolific batch's bonus rule (the panel's form)."""
    batch = get_object_or_404(Batch, name=name)
    try:
        rule = prolific_bonuses.set_bonus_rule(batch, request.POST.get("kind", ""), request.POST.get("amount", ""))
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Bonus rule: {rule.describe()}.")
    return redirect(f"{reverse('annotation:batch-detail', args=[batch.name])}#bonuses")


@researcher_required
@require_POST
def batch_bonus_pay(request: HttpRequest, name: str) -> HttpResponse:
    """Pay the bonuses owed, exactly once, as a background job (a second click pays nothing)."""
    batch = get_object_or_404(Batch, name=name)
    try:
        job = prolific_bonuses.start_pay_bonuses(batch, expected_total=request.POST.get("expected_total") or None)
    except ServiceError as exc:
        messages.error(request, str(exc))
        return redirect(f"{reverse('annotation:batch-detail', args=[batch.name])}#bonuses")
    return redirect("core:job-detail", pk=job.pk)

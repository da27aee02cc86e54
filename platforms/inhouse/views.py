"""In-house annotators' pages (the next HIT, the training step, the HIT page and its correction: each
shared with Prolific participants where its name says ``_step``), the researchers' Team pages, and the
one-time link where an annotator chooses their password.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse, reverse_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.accounts import access_token_generator
from annotation.crowd.forms import HitAnswerForm, TrainingAnswerForm
from annotation.crowd.services.publishing import CATEGORIES, hit_page_context
from annotation.models import Assignment, Batch, Provider
from annotation.quality.services.training import qualification_of, submit_training
from core.errors import ServiceError
from core.web.permissions import researcher_required
from platforms.inhouse.selectors import (
    ANNOTATORS_GROUP,
    get_member,
    team_members,
    team_overview,
    team_progress,
    unfillable_places,
)
from platforms.inhouse.services import team
from platforms.inhouse.services.annotators import annotator_worker, in_annotators
from platforms.inhouse.services.corrections import (
    NotCorrectable,
    correct_assignment,
    current_answers,
    why_not_correctable,
)
from platforms.inhouse.services.handout import NotAnnotator, NotOpenToWorker, next_hit_for
from platforms.inhouse.services.hit_page import (
    answered_and_progress,
    answered_count,
    held_assignment,
    hit_queries_of,
    submit_local_assignment,
)
from platforms.inhouse.services.team_access import open_to


@login_required
def next_hit(request: HttpRequest) -> HttpResponse:
    """Send an annotator to their training step, the HIT they are on, or a new one."""
    try:
        step = next_hit_for(request.user)
    except NotAnnotator as exc:
        raise PermissionDenied(str(exc)) from None
    if step.training is not None:
        return redirect("annotation:training", name=step.training.name)
    if step.assignment is None:  # the last HIT just submitted may still be corrected from here
        return render(request, "annotation/no_more_hits.html", {"correct_url": correction_link(request)}, status=200)
    return redirect("annotation:assignment", pk=step.assignment.pk)


@login_required
def training_page(request: HttpRequest, name: str) -> HttpResponse:
    """The batch's qualification step for an annotator it is open to (else 404, as for no such batch)."""
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
        "instructions_open": True,
    }
    if mode == "local":
        context["answered_count"] = answered_count(request.user)
    return render(request, "annotation/hit.html", context, status=400 if errors else 200)


@login_required
def assignment_page(request: HttpRequest, pk: int) -> HttpResponse:
    """One HIT for its annotator (only while they are one), on the shared HIT page."""
    assignment = held_assignment(pk, request.user.pk)
    if assignment is None:
        raise Http404("No such HIT of yours.")
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
    hit_queries = hit_queries_of(hit)
    action = reverse("annotation:assignment", args=[assignment.pk])
    if request.method == "POST":
        form = HitAnswerForm(hit_queries, request.POST)
        if form.is_valid():
            try:
                check = submit_local_assignment(
                    assignment, form.answers(), hit_queries=hit_queries, count_answered=True, current=True
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
                    # Shown on their home page (the HIT page shows no messages).
                    lost = "will not count" if hit.batch.failed_gold_answers != "keep" else "will not be paid"
                    messages.warning(request, f"This HIT {lost}: {assignment.feedback}")
                    return redirect("annotation:batch-list")
                count = check.answered_count
                messages.success(
                    request,
                    f"Thank you: your answers to HIT {check.hit_number} of {hit.batch.name} were recorded. "
                    f"You have submitted {count} HIT{'s' if count != 1 else ''}.",
                    extra_tags=f"{_CORRECT}{assignment.pk}",
                )
            return redirect("annotation:next")
        context = unanswered_context(request, hit, form, mode="local", action=action, hit_queries=hit_queries)
    else:
        context = hit_page_context(hit, mode="local", action=action, hit_queries=hit_queries)
        context["correct_url"] = correction_link(request)
    context["answered_count"], context["progress"] = answered_and_progress(assignment)
    # Open on their first HIT of the batch only: after it the first query is in view at once.
    context["instructions_open"] = context["progress"].number == 1
    return render(request, "annotation/hit.html", context, status=400 if request.method == "POST" else 200)


#: The tag of a submit's confirmation that offers to correct it: ``correct-<assignment pk>``.
_CORRECT = "correct-"


def correction_link(request: HttpRequest) -> str | None:
    """The correction page of the HIT just submitted, read from its confirmation (no query)."""
    from django.contrib.messages import get_messages

    for message in get_messages(request):  # iterating again in the template still shows them
        for tag in message.extra_tags.split():
            if tag.startswith(_CORRECT) and tag[len(_CORRECT) :].isdigit():
                return reverse("annotation:assignment-correct", args=[int(tag[len(_CORRECT) :])])
    return None


@login_required
@require_http_methods(["GET", "POST"])
def correct_page(request: HttpRequest, pk: int) -> HttpResponse:
    """The HIT an annotator submitted last, with their answers, to correct while it is not yet used."""
    mine = Assignment.objects.select_related("hit__batch", "worker__identity").annotate(
        annotator=in_annotators(request.user.pk)
    )
    assignment = get_object_or_404(mine, pk=pk, worker__identity__user=request.user)
    if not assignment.annotator:
        raise PermissionDenied("Only annotators answer HITs.")
    return correction_step(request, assignment, mode="local", done_url=reverse("annotation:next"))


def correction_step(request: HttpRequest, assignment: Assignment, *, mode: str, done_url: str) -> HttpResponse:
    """The shared HIT page for correcting ``assignment`` (in-house annotators and Prolific participants)."""
    hit = assignment.hit

    def refused(message: str) -> HttpResponse:
        context = {"heading": "Cannot be corrected", "message": message, "continue_url": done_url}
        return render(request, "annotation/no_more_hits.html", context, status=409)

    reason = why_not_correctable(assignment)
    if reason is not None:
        return refused(f"This HIT cannot be corrected: {reason}.")
    hit_queries = list(hit.hit_queries.select_related("batch_query").order_by("position"))
    action = request.path
    if request.method == "POST":
        form = HitAnswerForm(hit_queries, request.POST)
        if form.is_valid():
            try:
                check = correct_assignment(assignment, form.answers(), hit_queries=hit_queries)
            except NotCorrectable as exc:
                return refused(str(exc))
            if mode == "local":  # a participant goes back to Prolific, which shows no message of ours
                changed = "were corrected" if check is not None else "were already as you sent them"
                messages.success(request, f"Your answers to HIT {hit.position} of {hit.batch.name} {changed}.")
            return redirect(done_url)
        context = unanswered_context(request, hit, form, mode=mode, action=action, hit_queries=hit_queries)
    else:
        context = hit_page_context(
            hit, mode=mode, action=action, answers=current_answers(assignment), hit_queries=hit_queries
        )
    context["title"] = f"Correct your answers: {hit.batch.title}"
    context["correcting"] = True
    context["instructions_open"] = False
    context["answered_count"] = answered_count(request.user) if mode == "local" else None
    return render(request, "annotation/hit.html", context, status=400 if request.method == "POST" else 200)


def unanswered_context(request: HttpRequest, hit, form, *, mode: str, action: str, hit_queries) -> dict:
    """The HIT page again after a submit with queries left unanswered: the choices kept, errors beside them."""
    return hit_page_context(
        hit,
        mode=mode,
        action=action,
        answers={k: v for k, v in request.POST.items() if k.startswith("q-")},
        errors=form.field_errors(),
        hit_queries=hit_queries,
    )


ACCESS_CHOICES = [
    ("link", "One-time link: they choose their password"),
    ("password", "Generated password, shown once here"),
]


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150, help_text="Letters, digits and @ . + - _")
    email = forms.EmailField(required=False, help_text="Optional; for your records (no mail is sent).")
    access = forms.ChoiceField(choices=ACCESS_CHOICES, initial="link", widget=forms.RadioSelect)


class AccessForm(forms.Form):
    access = forms.ChoiceField(choices=ACCESS_CHOICES, initial="link", widget=forms.RadioSelect)


class TeamForm(forms.Form):
    """Who may work on a local batch: ticked annotators; none ticked: everyone."""

    members = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple, label="Team")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["members"].choices = [
            (m.username, m.username if m.is_active else f"{m.username} (deactivated)") for m in team_members()
        ]


def _credentials(request: HttpRequest, access: team.Access, *, new: bool) -> HttpResponse:
    """The one time a password or link is shown (the caller is ``never_cache``: no-store)."""
    context = {
        "member": access.user,
        "password": access.password,
        "link": request.build_absolute_uri(access.link_path) if access.link_path else None,
        "link_expires": access.link_expires,
        "new": new,
    }
    return render(request, "annotation/team_credentials.html", context)


@never_cache
@researcher_required
@require_http_methods(["GET", "POST"])
def team_page(request: HttpRequest) -> HttpResponse:
    """Every annotator; POST adds one and shows their link or password once."""
    form = MemberForm(request.POST or None)
    if form.is_valid():  # never for the unbound form of a GET
        data = form.cleaned_data
        try:
            access = team.add_member(data["username"], data["email"], access=data["access"])
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            return _credentials(request, access, new=True)
    context = {"form": form, "members": team_overview()}
    return render(request, "annotation/team.html", context, status=400 if form.is_bound else 200)


def _member(username: str):
    try:
        return get_member(username)
    except ServiceError:
        raise Http404("No such annotator.") from None


@researcher_required
@require_GET
def member_page(request: HttpRequest, username: str) -> HttpResponse:
    member = _member(username)
    context = {
        "member": member,
        "batches": member.annotation_team_batches.order_by("-created"),
        "access_form": AccessForm(),
        "answered": answered_count(member),
    }
    return render(request, "annotation/team_member.html", context)


@never_cache
@researcher_required
@require_POST
def member_access(request: HttpRequest, username: str) -> HttpResponse:
    """A new one-time link or password; the old password and links stop working."""
    member = _member(username)
    form = AccessForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a one-time link or a generated password.")
        return redirect("annotation:team-member", username=member.username)
    return _credentials(
        request, team.reset_access(member, access=form.cleaned_data["access"], by=request.user), new=False
    )


@researcher_required
@require_POST
def member_active(request: HttpRequest, username: str) -> HttpResponse:
    member = _member(username)
    if request.POST.get("active") not in ("0", "1"):
        messages.error(request, "active: send 1 to let them log in again or 0 to deactivate them.")
        return redirect("annotation:team-member", username=member.username)
    active = request.POST["active"] == "1"
    team.set_active(member, active, by=request.user)
    if active:
        messages.success(request, f"{member.username} can log in again (earlier sessions and links stay ended).")
    else:
        messages.success(
            request,
            f"{member.username} is deactivated: they can no longer log in or take HITs; "
            "their sessions and one-time links ended for good, and the HITs they held went back to the queue.",
        )
    return redirect("annotation:team-member", username=member.username)


def _local_batch(name: str) -> Batch:
    return get_object_or_404(Batch, name=name, provider=Provider.LOCAL)


@researcher_required
@require_http_methods(["GET", "POST"])
def batch_team(request: HttpRequest, name: str) -> HttpResponse:
    """The batch page's team section (GET, loaded by htmx); POST sets the team."""
    batch = _local_batch(name)
    if request.method == "POST":
        form = TeamForm(request.POST)
        if form.is_valid():
            try:
                members = team.set_batch_team(batch, form.cleaned_data["members"])
            except ServiceError as exc:
                messages.error(request, str(exc))
            else:
                if members:
                    names = ", ".join(m.username for m in members)
                    messages.success(request, f"Batch {batch.name} is restricted to its team: {names}.")
                else:
                    messages.success(request, f"Batch {batch.name} is open to every annotator.")
        else:
            messages.error(request, "; ".join(" ".join(errors) for errors in form.errors.values()))
        return redirect(reverse_lazy("annotation:batch-detail", kwargs={"name": batch.name}) + "#team")
    form = TeamForm(initial={"members": list(batch.team.values_list("username", flat=True))})
    context = {"batch": batch, "form": form, "unfillable": unfillable_places(batch), **_progress(batch)}
    return render(request, "annotation/_batch_team.html", context)


@researcher_required
@require_GET
def batch_team_progress(request: HttpRequest, name: str) -> HttpResponse:
    """Each annotator's progress and quality on the batch (htmx polls it while the batch is published)."""
    batch = _local_batch(name)
    return render(request, "annotation/_batch_team_progress.html", {"batch": batch, **_progress(batch)})


def _progress(batch: Batch) -> dict:
    return {"rows": team_progress(batch), "restricted": batch.team.exists()}


class WelcomeView(auth_views.PasswordResetConfirmView):
    """An annotator's one-time link: choose a password (then log in); once, and only for active annotators."""

    template_name = "annotation/team_welcome.html"
    success_url = reverse_lazy("login")
    post_reset_login = False
    token_generator = access_token_generator

    def get_user(self, uidb64):
        user = super().get_user(uidb64)
        if user is None or not user.is_active or user.is_staff or user.is_superuser:
            return None
        return user if user.groups.filter(name=ANNOTATORS_GROUP).exists() else None

    def dispatch(self, *args, **kwargs):
        response = super().dispatch(*args, **kwargs)
        if not getattr(self, "validlink", False) and response.status_code == 200:
            response.status_code = 410  # used, expired or replaced: gone for good
        return response

    def form_valid(self, form):
        """Accepting the link is one conditional write (``team.accept_link``): once, however many browsers post it."""
        del self.request.session[auth_views.INTERNAL_RESET_SESSION_TOKEN]
        # self.user is as dispatch read it and checked the token against its password hash.
        accepted = team.accept_link(self.user, form.cleaned_data["new_password1"], checked_against=self.user.password)
        if not accepted:
            self.validlink = False
            return self.render_to_response(self.get_context_data(used_meanwhile=True))
        messages.success(self.request, "Your password is set: log in with it.")
        return HttpResponseRedirect(self.get_success_url())


welcome = WelcomeView.as_view()

"""Pages of long work: a job's page and the progress record it polls."""

from __future__ import annotations

import functools

from django.contrib import messages
from django.contrib.staticfiles import finders
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import Resolver404, resolve, reverse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST, require_safe
from django.views.defaults import page_not_found
from django.views.defaults import server_error as page_server_error
from drf_spectacular.views import SpectacularRedocView

from core.connection_kinds import KINDS
from core.errors import ServiceError
from core.forms import ApiTokenForm, ConnectionForm
from core.models import Job, Membership, chosen_group_id, roles_of
from core.selectors import (
    connection_state,
    connection_states,
    connections_key,
    connections_key_file,
    groups_of,
    jobs_for,
    members,
)
from core.serializers import JobSerializer
from core.services import groups as group_services
from core.services.api_tokens import api_token, revoke_api_token, token_of
from core.services.changelog import acknowledge_changelog
from core.services.connections import delete_connection, save_connection, start_test_connection
from core.web.permissions import connections_manager_required, researcher_required


def _job_context(job: Job) -> dict:
    job.finished = job.status in (Job.Status.DONE, Job.Status.FAILED)
    fraction = job.fraction if job.fraction is not None else (1.0 if job.status == Job.Status.DONE else 0.0)
    return {"job": job, "percent": round(100 * fraction)}


@researcher_required
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return render(request, "core/job_detail.html", _job_context(get_object_or_404(jobs_for(request.user), pk=pk)))


@researcher_required
def job_progress_fragment(request: HttpRequest, pk: int) -> HttpResponse:
    """The live part of the job page (htmx polls it); a finished job leads on to its result page
    (``HX-Redirect``), but not to a download, which would leave the page polling and downloading again."""
    job = get_object_or_404(jobs_for(request.user), pk=pk)
    response = render(request, "core/_job_progress.html", _job_context(job))
    result = job.result or {}
    leads_on = job.status == Job.Status.DONE and result.get("url") and not result.get("download")
    if leads_on and request.headers.get("HX-Request"):
        response["HX-Redirect"] = result["url"]
    return response


@researcher_required
def job_progress(request: HttpRequest, pk: int) -> JsonResponse:
    """Progress record of a long job, polled by pages (the REST API's representation)."""
    return JsonResponse(JobSerializer(get_object_or_404(jobs_for(request.user), pk=pk)).data)


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler404``: under ``/api/`` a path no endpoint answers is JSON too, like every API error."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return page_not_found(request, exception)


@require_safe
def favicon(request: HttpRequest) -> HttpResponse:
    """``/favicon.ico``: "no icon" (204, cached a day) instead of a 404 for what links none (a fragment, JSON)."""
    response = HttpResponse(status=204)
    response["Cache-Control"] = "public, max-age=86400"
    return response


#: ReDoc's page may load only this site's files (a second guard behind :func:`redoc_script`).
REDOC_CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self' 'unsafe-inline' blob:; worker-src 'self' blob:; "
    "style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'"
)


def offline_redoc():
    """drf-spectacular's ReDoc view, offline: no Google Fonts, the script from drf-spectacular-sidecar."""
    view = SpectacularRedocView.as_view(url_name="schema", template_name="core/redoc.html")

    @functools.wraps(view)
    def redoc(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        response = view(request, *args, **kwargs)
        response["Content-Security-Policy"] = REDOC_CONTENT_SECURITY_POLICY
        return response

    return redoc


#: The one address ReDoc's bundle loads by itself: the Redocly logo of its side menu's footer.
REDOC_CDN_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"


@functools.cache
def _redoc_bundle() -> bytes:
    with open(finders.find("drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"), "rb") as handle:
        # "data:," is no image: the logo's own onError hides it, and nothing is requested.
        return handle.read().replace(REDOC_CDN_LOGO.encode(), b"data:,")


def _json_safe_only(view):
    """GET and HEAD only, refusing the rest as every ``/api/`` answer is written: JSON (405, ``Allow``)."""

    @functools.wraps(view)
    def safe_only(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.method not in ("GET", "HEAD"):
            response = JsonResponse({"detail": f'Method "{request.method}" not allowed.'}, status=405)
            response["Allow"] = "GET, HEAD"
            return response
        return view(request, *args, **kwargs)

    return safe_only


@_json_safe_only
def redoc_script(request: HttpRequest) -> HttpResponse:
    """The sidecar's ReDoc bundle without its one CDN request (the footer logo); for researchers."""
    if not (request.user.is_authenticated and request.user.is_staff):
        raise PermissionDenied("The API documentation is for researchers.")
    response = HttpResponse(_redoc_bundle(), content_type="text/javascript; charset=utf-8")
    response["Cache-Control"] = "private, max-age=86400"
    return response


def api_not_found(request: HttpRequest) -> HttpResponse:
    """Every path under ``/api/`` no endpoint answers: JSON 404 even with debug on (Django's HTML page
    then); a path lacking only its final slash is redirected (GET, HEAD) or named (other methods)."""
    if not request.path.endswith("/"):
        try:
            match = resolve(request.path + "/")
        except Resolver404:
            match = None
        if match is not None and match.func is not api_not_found:
            if request.method in ("GET", "HEAD"):
                query = request.META.get("QUERY_STRING", "")
                return HttpResponsePermanentRedirect(request.path + "/" + (f"?{query}" if query else ""))
            return JsonResponse(
                {"detail": f"Not found. Did you mean {request.path}/ (with the final slash)?"}, status=404
            )
    return JsonResponse({"detail": "Not found."}, status=404)


def forbidden(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler403``: a page that says why, with a way home (``templates/403.html``); JSON under ``/api/``."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": str(exception) or "You do not have permission to do this."}, status=403)
    return render(request, "403.html", {"exception": str(exception)}, status=403)


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: a bug is still a 500, but an API client gets JSON it can parse."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Server error; the site's log has the details."}, status=500)
    return page_server_error(request)


@never_cache
@researcher_required
def api_token_page(request: HttpRequest) -> HttpResponse:
    """A researcher's API token: its dates, its key only in the ``no-store`` answer to the POST that
    made it (replacing the old); ``action=revoke`` deletes it."""
    form = ApiTokenForm(request.POST if request.method == "POST" else None)
    key, revoked = None, False
    if request.method == "POST":
        if request.POST.get("action") == "revoke":
            revoked = revoke_api_token(request.user)
        elif form.is_valid():
            key = api_token(request.user, renew=True, expires_in=form.expires_in())
            form = ApiTokenForm()
    context = {"key": key, "revoked": revoked, "token": token_of(request.user), "form": form}
    return render(request, "core/api_token.html", context)


# --- connections to outside services (core.selectors, core.services.connections) -------------------


@never_cache
@connections_manager_required
def connections_page(request: HttpRequest) -> HttpResponse:
    """The site's connections: each field's value in force and its source, a secret only by its last
    characters; a POST stores a connection's fields or forgets them."""
    forms: dict = {}
    status = 200
    if request.method == "POST":
        kind = request.POST.get("kind", "")
        if kind not in KINDS:
            return HttpResponse("unknown connection", status=400)
        if request.POST.get("action") == "forget":
            delete_connection(kind)
            messages.success(request, f"{KINDS[kind].title}: what this site stored is forgotten.")
            return redirect("connections")
        form = ConnectionForm(KINDS[kind], request.POST, state=connection_state(kind))
        if form.is_valid():
            try:
                save_connection(kind, form.values(), clear=form.cleared(), user=request.user)
            except ServiceError as exc:
                form.add_error(None, str(exc))
            else:
                messages.success(request, f"{KINDS[kind].title}: saved; the next call uses it.")
                return redirect("connections")
        forms[kind] = form
        status = 400
    context = {
        "cards": [
            {"state": state, "form": forms.get(state.kind.kind) or ConnectionForm(state.kind, state=state)}
            for state in connection_states()
        ],
        "key_set": bool(connections_key()),
        "key_file": connections_key_file(),
    }
    return render(request, "core/connections.html", context, status=status)


@connections_manager_required
@require_POST
def connection_test(request: HttpRequest, kind: str) -> HttpResponse:
    """Start the connection's test as a Job (never a call inside the request); back to the page."""
    if kind not in KINDS:
        return HttpResponse("unknown connection", status=404)
    start_test_connection(kind)
    messages.info(request, f"{KINDS[kind].title}: testing; the outcome appears below.")
    return redirect(f"{reverse('connections')}#connection-{kind}")


@never_cache
@connections_manager_required
def connection_test_fragment(request: HttpRequest, kind: str) -> HttpResponse:
    """The live part of a connection's card: its latest test, polling itself while it runs."""
    if kind not in KINDS:
        return HttpResponse("unknown connection", status=404)
    return render(request, "core/_connection_test.html", {"state": connection_state(kind)})


@researcher_required
def research_groups(request: HttpRequest) -> HttpResponse:
    """The user's research groups, members and roles; ``POST action=choose|set|remove``: choose where new
    studies go, or (an owner) add, change and remove members."""
    if request.method == "POST":
        group = get_object_or_404(groups_of(request.user), slug=request.POST.get("group", ""))
        action = request.POST.get("action")
        try:
            if action == "choose":
                group_services.choose_group(request, group)
            elif action == "set":
                username = request.POST.get("username", "").strip()
                membership, password = group_services.add_member(
                    request.user, group, username, request.POST.get("role", "")
                )
                if password:  # a new account: its password shown on this answer only (no redirect, no-store)
                    made = {"username": membership.user.get_username(), "password": password, "group": group}
                    response = _research_groups_page(request, made)
                    add_never_cache_headers(response)
                    return response
            elif action == "remove":
                group_services.remove_member(request.user, group, request.POST.get("username", ""))
            else:
                return HttpResponse("action: one of choose, set, remove", status=400, content_type="text/plain")
        except ServiceError as exc:
            messages.error(request, str(exc))
        return redirect("research-groups")
    return _research_groups_page(request)


def _research_groups_page(request: HttpRequest, made: dict | None = None) -> HttpResponse:
    roles = roles_of(request.user)
    chosen = chosen_group_id(request)
    rows = [
        {"group": g, "role": roles.get(g.pk), "members": members(g), "chosen": g.pk == chosen}
        for g in groups_of(request.user)
    ]
    context = {"rows": rows, "roles": Membership.Role.values, "made": made}
    return render(request, "core/research_groups.html", context)


@researcher_required
@require_POST
def changelog_acknowledge(request: HttpRequest) -> HttpResponse:
    """The researcher has read what changed (the home page's notice): it is not shown again."""
    acknowledge_changelog(request.user)
    return redirect("home")

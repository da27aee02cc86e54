"""Middleware of the site's own: the request's group scope and user, refusals that say why, and
requests no database can look up: PostgreSQL refuses a NUL in a string (a 500 at the lookup), and
no name or parameter of this site holds one, so such a request is a 400 before any view.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib.auth.middleware import AuthenticationMiddleware as _DjangoAuthentication
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.utils.functional import SimpleLazyObject

from core.db.scope import answering
from core.web.sessions import reading_user_of

MESSAGE = "the address contains a NUL character (%00), which no name or parameter of this site can hold"


def _in_parameters(request: HttpRequest) -> bool:
    return any("\x00" in key or any("\x00" in value for value in values) for key, values in request.GET.lists())


def refuse_nul_characters(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable[[HttpRequest], HttpResponse]:
    def middleware(request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path or _in_parameters(request):
            if request.path.startswith("/api/"):
                return JsonResponse({"detail": MESSAGE}, status=400)
            return HttpResponseBadRequest(MESSAGE, content_type="text/plain; charset=utf-8")
        return get_response(request)

    return middleware


def explain_wrong_methods(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable[[HttpRequest], HttpResponse]:
    """A page's empty 405 (``require_POST``) becomes a page saying which methods it takes, status and
    ``Allow`` kept; API answers and non-empty 405s pass through."""

    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        if response.status_code != 405 or request.path.startswith("/api/") or response.content:
            return response
        from django.template.loader import render_to_string

        allowed = [m.strip() for m in response.get("Allow", "").split(",") if m.strip()]
        page = render_to_string("405.html", {"method": request.method, "allowed": allowed}, request=request)
        friendly = HttpResponse(page, status=405)
        if allowed:
            friendly["Allow"] = ", ".join(allowed)
        return friendly

    return middleware


def group_scope(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable[[HttpRequest], HttpResponse]:
    """Everything a request reads or makes is in its user's research groups (``core.db.scope``): the
    one place pages and endpoints are scoped, so another group's objects are not found (404)."""

    def middleware(request: HttpRequest) -> HttpResponse:
        with answering(request):
            return get_response(request)

    return middleware


class AuthenticationMiddleware(_DjangoAuthentication):
    """Django's, taking the user the session's own statement read (``core.web.sessions``) when it did."""

    def process_request(self, request: HttpRequest) -> None:
        super().process_request(request)
        request.user = SimpleLazyObject(lambda: _user_of(request))


def _user_of(request: HttpRequest):
    from django.contrib import auth

    if not hasattr(request, "_cached_user"):
        with reading_user_of(request.session):
            request._cached_user = auth.get_user(request)
    return request._cached_user

"""REST endpoints of the shared app (jobs, connections) and what the apps' endpoints share: staged
uploads, the reading of a request, and the one exception handler (every refusal JSON with a 4xx)."""

from collections.abc import Iterable
from pathlib import PurePath

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.core.exceptions import ValidationError as DjangoValidationError
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, permissions, serializers, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView
from rest_framework.views import exception_handler as drf_exception_handler

from core.connection_kinds import KINDS
from core.errors import FieldError, ProviderError, ServiceError, StateError
from core.jobs import TooManyJobs
from core.models import Job
from core.selectors import connection_state, connection_states, jobs_for
from core.serializers import ConnectionSerializer, ConnectionUpdateSerializer, JobSerializer
from core.services.connections import delete_connection, save_connection, start_test_connection
from core.services.uploads import discard_uploads, use_staging_uploads
from core.web.permissions import can_manage_connections
from genderbias.errors import InputError


class JobViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Job.objects.all()
    serializer_class = JobSerializer
    permission_classes = [permissions.IsAdminUser]

    def get_queryset(self):
        return jobs_for(self.request.user)


class StagedUploadsMixin:
    """An API view whose uploads stream into the staging folder, as the pages' do; what a request
    uploaded and did not keep is removed when the response leaves."""

    def initialize_request(self, request, *args, **kwargs):
        use_staging_uploads(request)
        return super().initialize_request(request, *args, **kwargs)

    def finalize_response(self, request, response, *args, **kwargs):
        discard_uploads(request._request.FILES if hasattr(request._request, "_files") else {})
        return super().finalize_response(request, response, *args, **kwargs)


def body_object(request) -> dict:
    """The request's body as a mapping (a form post or a JSON object); anything else is a 400."""
    if not isinstance(request.data, dict):
        raise ValidationError({"detail": "send a JSON object or a form, not a JSON list or value"})
    return request.data


#: Fields a body may carry beyond its serializer's: a form's CSRF token (a session's form post).
_ALWAYS_ALLOWED = frozenset({"csrfmiddlewaretoken"})


def checked(
    serializer_class: type[serializers.Serializer], data, *, also: Iterable[str] = (), query: bool = False
) -> dict:
    """The API's one reading of a request: ``data`` (a body, or with ``query`` the query parameters)
    parsed by the serializer that documents it, defaults filled in; a 400 naming the field when a
    value cannot be read, or when a body's field is unknown to the serializer and to ``also`` (a
    misspelt field must not fall back silently to its default).

    The serializer only reads (types, formats); a rule on the values is checked once, by the
    service the endpoint calls or the page's form it hands them to (:func:`form_data`)."""
    params = serializer_class(data=data)
    if not query and hasattr(data, "keys"):
        known = set(params.fields) | set(also) | _ALWAYS_ALLOWED
        unknown = sorted(str(key) for key in data if key not in known)
        if unknown:
            raise ValidationError(
                {key: [f"{key}: no such field; known: {', '.join(sorted(params.fields))}"] for key in unknown[:20]}
            )
    params.is_valid(raise_exception=True)
    return params.validated_data


def form_data(request, serializer_class: type[serializers.Serializer]) -> dict:
    """The request's body read by :func:`checked`, as data for the page's form and its rules."""
    return checked(serializer_class, request.data)


def form_errors(form) -> ValidationError:
    """A Django form's errors as the API's 400 answer: ``{field: [message, ...]}``."""
    return ValidationError({field: [e["message"] for e in errs] for field, errs in form.errors.get_json_data().items()})


class ErrorSerializer(serializers.Serializer):
    """The body of a refusal (field errors come as ``{field: [message, ...]}`` instead)."""

    detail = serializers.CharField()


def _refusal(status: int, detail: str, code: str) -> exceptions.APIException:
    """A refusal DRF answers with ``status`` and ``{"detail": detail}``."""
    refusal = exceptions.APIException(detail, code)
    refusal.status_code = status
    return refusal


def exception_handler(exc, context) -> Response | None:
    """``REST_FRAMEWORK["EXCEPTION_HANDLER"]``: every refusal is JSON with a 4xx and a message.

    Beyond DRF's own: :class:`~core.errors.ServiceError` and :class:`~genderbias.errors.InputError`
    are 400s, a :class:`~core.errors.FieldError` a 400 naming its field, a
    :class:`~core.errors.StateError` a 409, too many jobs a 429; a :class:`~core.errors.ProviderError`
    is a 502 when the provider itself failed (the request may succeed later). A body too large is
    a 413; one nested too deeply or with too many fields a 400. Anything else stays a 500: a bug.
    """
    if isinstance(exc, RequestDataTooBig):
        exc = _refusal(
            413,
            f"the request body is larger than the {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes this site accepts "
            "(DATA_UPLOAD_MAX_MEMORY_SIZE); send files as uploads (multipart), not in the body",
            "payload_too_large",
        )
    elif isinstance(exc, (TooManyFieldsSent, TooManyFilesSent)):
        exc = ValidationError({"detail": str(exc)})
    elif isinstance(exc, RecursionError) and _raised_by_a_parser(exc):
        exc = exceptions.ParseError("JSON parse error - the body is nested too deeply")
    elif isinstance(exc, ProviderError) and exc.upstream:
        exc = _refusal(502, str(exc), "bad_gateway")
    elif isinstance(exc, TooManyJobs):
        exc = _refusal(429, str(exc), "too_many_jobs")
    elif isinstance(exc, StateError):
        exc = _refusal(409, str(exc), "conflict")
    elif isinstance(exc, FieldError):
        exc = ValidationError({exc.field: [exc.problem]})
    elif isinstance(exc, (ServiceError, InputError)):
        exc = ValidationError({"detail": str(exc)})
    elif isinstance(exc, DjangoValidationError):
        exc = ValidationError(exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages})
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(response.data, list):
        response.data = {"detail": response.data}
    if response is not None:
        _refuse_in_json(context.get("request"))
    return response


def _refuse_in_json(request) -> None:
    """Render a refusal as JSON whatever the endpoint renders on success: ``/api/`` has one error shape."""
    if request is None or getattr(getattr(request, "accepted_renderer", None), "format", None) == "json":
        return
    request.accepted_renderer = JSONRenderer()
    request.accepted_media_type = JSONRenderer.media_type


def _raised_by_a_parser(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while a DRF parser read the body (not by the view's own code)."""
    frame = exc.__traceback__
    while frame is not None:
        if PurePath(frame.tb_frame.f_code.co_filename).parts[-2:] == ("rest_framework", "parsers.py"):
            return True
        frame = frame.tb_next
    return False


def job_started(job) -> Response:
    """The API's one reply to a request that started long work: 202 with the job, ``Location`` to poll."""
    response = Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)
    response["Location"] = reverse("job-detail", args=[job.pk])
    return response


def form_job_started(form) -> Response:
    """:func:`job_started` for the job a page's form starts (``form.start()``), its rules the API's: errors a 400."""
    if not form.is_valid():
        raise form_errors(form)
    return job_started(form.start())


# --- connections to outside services ------------------------------------------------------------


class CanManageConnections(permissions.BasePermission):
    """:func:`core.web.permissions.can_manage_connections`, for the API."""

    message = "Only the researchers who manage the site's connections may use this endpoint."

    def has_permission(self, request, view) -> bool:
        return can_manage_connections(request.user)


def _connection_or_404(kind: str):
    if kind not in KINDS:
        raise exceptions.NotFound(f"no connection {kind!r}; known: {', '.join(KINDS)}")
    return connection_state(kind)


class ConnectionListView(APIView):
    """The site's connections as in force (``core.selectors``): sources, never a secret."""

    permission_classes = [CanManageConnections]

    @extend_schema(responses={200: ConnectionSerializer(many=True)})
    def get(self, request, format=None):
        return Response(ConnectionSerializer(connection_states(), many=True).data)


class ConnectionDetailView(APIView):
    """One connection: read it, change what the site stores (PUT or PATCH: the fields given), forget it (DELETE)."""

    permission_classes = [CanManageConnections]
    parser_classes = [JSONParser, FormParser, MultiPartParser]

    @extend_schema(responses={200: ConnectionSerializer, 404: ErrorSerializer})
    def get(self, request, kind: str, format=None):
        return Response(ConnectionSerializer(_connection_or_404(kind)).data)

    @extend_schema(
        request=ConnectionUpdateSerializer,
        responses={200: ConnectionSerializer, 400: ErrorSerializer, 404: ErrorSerializer},
    )
    def put(self, request, kind: str, format=None):
        """Store the fields given (secrets sealed with CONNECTIONS_KEY; without it, a 400 naming it)."""
        _connection_or_404(kind)
        data = checked(ConnectionUpdateSerializer, body_object(request))
        save_connection(kind, data.get("values", {}), clear=data.get("clear", []), user=request.user)
        return Response(ConnectionSerializer(_connection_or_404(kind)).data)

    patch = put

    @extend_schema(responses={204: None, 404: ErrorSerializer})
    def delete(self, request, kind: str, format=None):
        _connection_or_404(kind)
        delete_connection(kind)
        return Response(status=204)


class ConnectionTestView(APIView):
    """Test a connection as a background job (202 with the Job; its message says what worked or failed)."""

    permission_classes = [CanManageConnections]

    @extend_schema(request=None, responses={202: JobSerializer, 404: ErrorSerializer})
    def post(self, request, kind: str, format=None):
        _connection_or_404(kind)
        return job_started(start_test_connection(kind))

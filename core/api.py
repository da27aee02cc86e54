"""REST endpoints of the shared app: progress records of long work (researchers only),
and what the apps' endpoints share: uploads into the staging folder, form errors as JSON,
and the one exception handler that turns every refusal into JSON with a 4xx status (a 502
when a crowd provider failed)."""

from collections.abc import Iterable

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, permissions, serializers, viewsets
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

        return jobs_for(self.request.user)  # a connection's test: its managers only


class StagedUploadsMixin:
    """An API view whose uploads stream into the staging folder, as the pages' do.

    Whatever a request uploaded and did not keep (refused, invalid, failed) is removed
    when the response leaves. Read ``request.data`` before ``upload_too_large``: parsing
    the body is what sets it.
    """

    def initialize_request(self, request, *args, **kwargs):
        use_staging_uploads(request)
        return super().initialize_request(request, *args, **kwargs)

    def finalize_response(self, request, response, *args, **kwargs):
        discard_uploads(request._request.FILES if hasattr(request._request, "_files") else {})
        return super().finalize_response(request, response, *args, **kwargs)


def body_object(request) -> dict:
    """The request's body as a mapping (a form post, or a JSON object); a JSON list, number or
    string is refused with a 400, as a form cannot read it."""
    if not isinstance(request.data, dict):
        raise ValidationError({"detail": "send a JSON object or a form, not a JSON list or value"})
    return request.data


#: Fields a body may carry beyond its serializer's: a form's CSRF token (a session's form post).
_ALWAYS_ALLOWED = frozenset({"csrfmiddlewaretoken"})


def checked(
    serializer_class: type[serializers.Serializer], data, *, also: Iterable[str] = (), query: bool = False
) -> dict:
    """The API's one reading of a request: ``data`` (``body_object(request)``, ``request.data`` or,
    with ``query``, ``request.query_params``) parsed by the serializer that documents it, its defaults
    filled in; a 400 naming the field when a value cannot be read.

    A body's field that neither the serializer nor ``also`` (names the caller hands on to be refused
    by name later) knows is refused, a 400 naming it (``assignments_per_querry`` made a batch with the
    default 3, silently). Query parameters are not checked so (``format``, ``page``: the framework's).

    The serializer only reads (types, formats, the fields the OpenAPI schema shows): a rule on
    the values is checked once, by the service the endpoint calls (a :class:`~core.errors.FieldError`,
    answered as a 400 naming the field by :func:`exception_handler`), or by the page's form
    the endpoint hands them to (:func:`form_data`, :func:`form_errors`)."""
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
    """The request's body read by :func:`checked`, as the data of the page's form, which then
    applies the page's rules."""
    return checked(serializer_class, request.data)


def form_errors(form) -> ValidationError:
    """A Django form's errors as the API's 400 answer: ``{field: [message, ...]}``."""
    return ValidationError({field: [e["message"] for e in errs] for field, errs in form.errors.get_json_data().items()})


class ErrorSerializer(serializers.Serializer):
    """The body of a refusal (field errors come as ``{field: [message, ...]}`` instead)."""

    detail = serializers.CharField()


class Conflict(exceptions.APIException):
    status_code = 409
    default_detail = "The object's state refuses this action."
    default_code = "conflict"


class PayloadTooLarge(exceptions.APIException):
    status_code = 413
    default_detail = "The request body is too large."
    default_code = "payload_too_large"


class TooManyRequests(exceptions.APIException):
    status_code = 429
    default_detail = "Too many jobs in flight; ask again when one has finished."
    default_code = "too_many_jobs"


class BadGateway(exceptions.APIException):
    status_code = 502
    default_detail = "The crowd provider failed to answer."
    default_code = "bad_gateway"


def exception_handler(exc, context) -> Response | None:
    """``REST_FRAMEWORK["EXCEPTION_HANDLER"]``: every refusal is JSON with a 4xx and a message.

    DRF already answers its own exceptions, ``Http404`` and ``PermissionDenied``; this adds
    the project's two error types and Django's model validation, which would otherwise
    escape as 500s: :class:`~core.errors.ServiceError` (a taken name, an empty selection)
    and :class:`~genderbias.errors.InputError` (a file's content, named with its line) are 400s;
    a :class:`~core.errors.StateError` (the object's state refuses the action, such as
    publishing a completed batch) is a 409; a :class:`~core.errors.FieldError` (a service's check of
    one field's rule) is a 400 naming its field, as a serializer's would. A :class:`~core.errors.ProviderError` is a
    ServiceError (400) when the provider refused the call, and a 502 when the provider
    itself failed (5xx, throttled past the retries, no answer): the request was fine and
    may succeed later. The body is always ``{"detail": message}`` or, for field errors,
    ``{field: [message, ...]}``.
    A body nested too deeply for the JSON decoder (``[[[[...`` 100,000 deep: a
    ``RecursionError`` inside the parser) is a 400 like any unreadable body.
    A body larger than ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (Django's ``RequestDataTooBig``, raised
    when the view first reads ``request.data``) is a 413, and too many form fields or files
    (``TooManyFieldsSent``, ``TooManyFilesSent``) a 400, in JSON rather than Django's HTML page.
    Anything else stays a 500: a bug, not a refusal.
    """
    from django.conf import settings
    from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent

    if isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge(
            f"the request body is larger than the {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes this site accepts "
            "(DATA_UPLOAD_MAX_MEMORY_SIZE); send files as uploads (multipart), not in the body"
        )
    elif isinstance(exc, (TooManyFieldsSent, TooManyFilesSent)):
        exc = ValidationError({"detail": str(exc)})
    elif isinstance(exc, RecursionError) and _raised_by_a_parser(exc):
        exc = exceptions.ParseError("JSON parse error - the body is nested too deeply")
    elif isinstance(exc, ProviderError) and exc.upstream:
        exc = BadGateway(str(exc))
    elif isinstance(exc, TooManyJobs):
        exc = TooManyRequests(str(exc))
    elif isinstance(exc, StateError):
        exc = Conflict(str(exc))
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
    """A refusal is rendered as JSON whatever the endpoint renders when it succeeds: the schema's
    YAML, Swagger UI's page, a TSV download. A client reading ``/api/`` reads one error shape."""
    if request is None or getattr(getattr(request, "accepted_renderer", None), "format", None) == "json":
        return
    request.accepted_renderer = JSONRenderer()
    request.accepted_media_type = JSONRenderer.media_type


def _raised_by_a_parser(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while a DRF parser read the body (not by the view's own code)."""
    from pathlib import PurePath

    frame = exc.__traceback__
    while frame is not None:
        if PurePath(frame.tb_frame.f_code.co_filename).parts[-2:] == ("rest_framework", "parsers.py"):
            return True
        frame = frame.tb_next
    return False


def job_started(job) -> Response:
    """The API's one reply to a request that started long work: 202 with the job's record
    (:class:`~core.serializers.JobSerializer`); ``Location`` is where to poll it."""
    from django.urls import reverse
    from rest_framework import status

    response = Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)
    response["Location"] = reverse("job-detail", args=[job.pk])
    return response


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

        return Response([ConnectionSerializer(ConnectionSerializer.of(s)).data for s in connection_states()])


class ConnectionDetailView(APIView):
    """One connection: read it, change what the site stores (PUT or PATCH: the fields given), forget it (DELETE)."""

    permission_classes = [CanManageConnections]
    parser_classes = [JSONParser, FormParser, MultiPartParser]

    @extend_schema(responses={200: ConnectionSerializer, 404: ErrorSerializer})
    def get(self, request, kind: str, format=None):
        return Response(ConnectionSerializer(ConnectionSerializer.of(_connection_or_404(kind))).data)

    @extend_schema(
        request=ConnectionUpdateSerializer,
        responses={200: ConnectionSerializer, 400: ErrorSerializer, 404: ErrorSerializer},
    )
    def put(self, request, kind: str, format=None):
        """Store the fields given (secrets sealed with CONNECTIONS_KEY; without it, a 400 naming it)."""

        _connection_or_404(kind)
        data = checked(ConnectionUpdateSerializer, body_object(request))
        save_connection(kind, data.get("values", {}), clear=data.get("clear", []), user=request.user)
        return Response(ConnectionSerializer(ConnectionSerializer.of(_connection_or_404(kind))).data)

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

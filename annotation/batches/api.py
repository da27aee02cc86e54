"""REST endpoints of a batch and its records (``/api/annotation/batches/`` …): researchers see and act
on everything, annotators reach only their own assignments and judgments; workers appear by pseudonym."""

from drf_spectacular.utils import OpenApiParameter, PolymorphicProxySerializer, extend_schema
from rest_framework import permissions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response

from annotation.batches.views import export_file_response
from annotation.crowd.forms import BatchForm
from annotation.crowd.providers.base import all_batch_options, provider_option
from annotation.crowd.providers.options import OptionError
from annotation.crowd.selectors import batch_progress
from annotation.crowd.serializers import (
    AdjudicateRequestSerializer,
    AdjudicationSerializer,
    AgreementSerializer,
    AssignmentSerializer,
    BatchProgressSerializer,
    BatchSerializer,
    CancelledSerializer,
    CostEstimateSerializer,
    EscalateRequestSerializer,
    EscalationStartedSerializer,
    ExportSerializer,
    HitSerializer,
    JudgmentSerializer,
    QueryResultSerializer,
    SyncRequestSerializer,
    WorkerQualitySerializer,
    batch_request_serializer,
    batch_request_serializers,
)
from annotation.crowd.services.background import start_publish, start_sync
from annotation.crowd.services.batches import cancel_batch
from annotation.exports.services import export_for_download
from annotation.models import Assignment, Batch, Export, Hit, Judgment
from annotation.quality.selectors import worker_quality
from annotation.quality.services import adjudication as adjudication_services
from annotation.quality.services.escalation import plan_escalation, start_escalate
from annotation.results.export_formats import DEFAULT_EXPORT_FORMAT, EXPORT_FORMATS
from annotation.results.selectors import agreement as agreement_selectors
from annotation.results.selectors import state as state_selectors
from annotation.results.selectors.labels import query_results
from core.api import ErrorSerializer, StagedUploadsMixin, body_object, checked, form_errors, job_started
from core.errors import StateError
from core.serializers import JobSerializer
from genderbias.labels import EXPORT_CATEGORIES, LABELS

#: Filters of the per-query rows: ``?q=`` (qid or text) and ``?label=`` (a label, or ``none``: set aside).
QUERY_FILTERS = [
    OpenApiParameter("q", str, description="Keep queries whose qid or text contains this (any case)."),
    OpenApiParameter(
        "label", str, enum=[*LABELS, "none"], description="Keep queries with this label; none: set aside."
    ),
]


#: The request of batch creation, one shape per registered platform (``provider`` tells which; none: local).
BATCH_REQUEST = PolymorphicProxySerializer(
    component_name="BatchRequest", serializers=batch_request_serializers, resource_type_field_name=None
)
BATCH_ESTIMATE_REQUEST = PolymorphicProxySerializer(
    component_name="BatchEstimateRequest",
    serializers=lambda: batch_request_serializers(estimate=True),
    resource_type_field_name=None,
)


#: Options whose value is a list (a form sends one entry per item).
LIST_FIELDS = frozenset(
    name for name, (option, _owner) in all_batch_options().items() if option.kind in ("choices", "batches")
)


def batch_form_data(data, *, estimate: bool = False) -> dict:
    """The request read by its platform's serializer (a 400 naming the field), as the batch form's data;
    any other field sent is handed on as sent, so the services refuse it by name rather than drop it."""
    provider = data.get("provider") or "local"
    try:
        provider_option().parse(provider)
    except OptionError as exc:
        raise ValidationError({"provider": [str(exc)]}) from None
    serializer = batch_request_serializer(provider, estimate=estimate)
    read = checked(serializer, data, also={*all_batch_options(), *BatchForm.base_fields})
    multiple = getattr(data, "getlist", None)
    sent = {key: (multiple(key) if multiple else data[key]) for key in data if key not in serializer().fields}
    for key, value in sent.items():
        if multiple and len(value) == 1 and key not in LIST_FIELDS:
            sent[key] = value[0]
        _refuse_command_line_option(key, sent[key])
    return {**sent, **read}


def _refuse_command_line_option(key: str, value) -> None:
    """An option of the command line only (``seed``...) sent here: read by its declaration and refused
    (a 400) unless it is the value the page and the API use, rather than dropped unseen."""
    option = (all_batch_options().get(key) or (None, None))[0]
    if option is None or option.on_form:
        return
    try:
        given = option.parse(value)
    except OptionError as exc:
        raise ValidationError({key: [str(exc)]}) from None
    if given is not None and given != option.default:
        raise ValidationError({key: [f"{option.field}: {option.why}; create_batch takes another ({option.cli})"]})


#: The API's export request: a category of labelled queries in one of the export formats.
class ExportRequestSerializer(serializers.Serializer):
    category = serializers.ChoiceField(choices=list(EXPORT_CATEGORIES))
    format = serializers.ChoiceField(choices=list(EXPORT_FORMATS), default=DEFAULT_EXPORT_FORMAT)
    as_query_set = serializers.SlugField(required=False, allow_blank=True)


class BatchViewSet(StagedUploadsMixin, viewsets.ReadOnlyModelViewSet):
    queryset = Batch.objects.select_related("query_set", "pool")
    serializer_class = BatchSerializer
    permission_classes = [permissions.IsAdminUser]
    lookup_field = "name"
    parser_classes = [JSONParser, MultiPartParser, FormParser]

    def _form(self, request, *, estimate_only: bool = False) -> BatchForm:
        data, files = body_object(request), request.FILES  # parse the body first: it sets upload_too_large
        form = BatchForm(
            batch_form_data(data, estimate=estimate_only),
            files,
            too_large=getattr(request._request, "upload_too_large", None),
            estimate_only=estimate_only,
        )
        if not form.is_valid():
            raise form_errors(form)
        return form

    @extend_schema(
        # Multipart, as the gold file travels in it (JSON bodies are read the same way, without a file).
        request={"multipart/form-data": BATCH_REQUEST},
        responses={201: BatchSerializer, 400: ErrorSerializer},
    )
    def create(self, request, *args, **kwargs):
        """Create a batch from a pool or a query set (the batch page's rules); nothing is published yet."""
        batch = self._form(request).create()
        return Response(BatchSerializer(batch).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=BATCH_ESTIMATE_REQUEST, responses={200: CostEstimateSerializer, 400: ErrorSerializer})
    @action(detail=False, methods=["post"])
    def estimate(self, request, format=None):
        """What a batch with these settings would cost (``name`` and ``gold`` not needed)."""
        return Response(self._form(request, estimate_only=True).estimate())

    @extend_schema(responses=BatchProgressSerializer)
    @action(detail=True)
    def progress(self, request, name=None, format=None):
        """HITs published, assignments handed out, submitted, approved and rejected, judgments; the
        batch's answered and expected assignments, gold failures and spend as every page shows them
        (a machine-labelled batch's are its crowd batches')."""
        batch = self.get_object()
        progress = batch_progress(batch)
        state = state_selectors.batch_state(batch, progress)
        shown = {key: state[key] for key in ("answered", "expected", "gold_failures", "spent")}
        return Response(BatchProgressSerializer(progress | {"batch": shown}).data)

    @extend_schema(responses=AgreementSerializer)
    @action(detail=True)
    def agreement(self, request, name=None, format=None):
        """Krippendorff's alpha and the rest of the agreement report (pseudonymous per-worker rows)."""
        return Response(agreement_selectors.agreement(self.get_object()))

    @extend_schema(parameters=QUERY_FILTERS, responses=QueryResultSerializer(many=True))
    @action(detail=True)
    def queries(self, request, name=None, format=None):
        """Per query: label, vote counts, Dawid-Skene's label (paginated; filter with ``q`` and ``label``)."""
        label = request.query_params.get("label")
        if label is not None and label not in (*LABELS, "none"):
            raise ValidationError({"label": f"choose one of {', '.join((*LABELS, 'none'))}"})
        text = request.query_params.get("q", "").strip().casefold()
        rows = [
            row
            for row in query_results(self.get_object())
            if (not text or text in f"{row['qid']} {row['query']}".casefold())
            and (label is None or row["label"] == (None if label == "none" else label))
        ]
        page = self.paginate_queryset(rows)
        return self.get_paginated_response(QueryResultSerializer(page, many=True).data)

    @extend_schema(responses=WorkerQualitySerializer(many=True))
    @action(detail=True)
    def workers(self, request, name=None, format=None):
        """Per worker (pseudonym): gold accuracy, agreement, Dawid-Skene accuracy, seconds per query."""
        return Response(WorkerQualitySerializer(worker_quality(self.get_object()), many=True).data)

    @extend_schema(responses=HitSerializer(many=True))
    @action(detail=True)
    def hits(self, request, name=None, format=None):
        hits = self.get_object().hits.order_by("position").prefetch_related("hit_queries__batch_query")
        page = self.paginate_queryset(hits)
        return self.get_paginated_response(HitSerializer(page, many=True).data)

    @extend_schema(request=None, responses={202: JobSerializer, 409: ErrorSerializer, 502: ErrorSerializer})
    @action(detail=True, methods=["post"])
    def publish(self, request, name=None, format=None):
        """Publish the batch's HITs as a background job; poll the returned URL (409 unless draft or published)."""
        return job_started(start_publish(self.get_object()))

    @extend_schema(
        request=SyncRequestSerializer, responses={202: JobSerializer, 409: ErrorSerializer, 502: ErrorSerializer}
    )
    @action(detail=True, methods=["post"])
    def sync(self, request, name=None, format=None):
        """Fetch and review assignments as a background job; poll the returned URL (409 while a draft)."""
        data = checked(SyncRequestSerializer, request.data)
        return job_started(start_sync(self.get_object(), approve_all=data["approve_all"]))

    @extend_schema(
        request=EscalateRequestSerializer,
        responses={202: EscalationStartedSerializer, 409: ErrorSerializer, 502: ErrorSerializer},
    )
    @action(detail=True, methods=["post"])
    def escalate(self, request, name=None, format=None):
        """One more assignment for each finished HIT with a disputed query, up to the cap, as a job.

        Only the HITs planned now (listed in the answer with the cost) are escalated, whatever
        is synced meanwhile, as on the page. 409 unless the batch is published or completed,
        or when no HIT needs another assignment.
        """
        batch = self.get_object()
        cap = checked(EscalateRequestSerializer, request.data)["max_assignments"]
        plan = plan_escalation(batch, cap)
        if not plan.hits:
            raise StateError(f"batch {batch.name!r} has no finished HIT with a disputed query below the cap")
        confirmed = [hit.pk for hit, _ in plan.hits]
        job = start_escalate(batch, max_assignments=cap, confirmed_hits=confirmed)
        response = job_started(job)
        response.data |= {
            "hits": [hit.position for hit, _ in plan.hits],
            "cost": str(plan.cost.total) if plan.cost else None,
        }
        return response

    @extend_schema(request=None, responses={200: CancelledSerializer, 409: ErrorSerializer, 502: ErrorSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, name=None, format=None):
        """Withdraw every open HIT and mark the batch cancelled (409 once completed); repeating it is harmless."""
        batch = self.get_object()
        expired = cancel_batch(batch)
        return Response(
            CancelledSerializer({"batch": batch.name, "status": batch.status, "expired_hits": expired}).data
        )

    @extend_schema(request=AdjudicateRequestSerializer, responses={200: AdjudicationSerializer})
    @action(detail=True, methods=["post"])
    def adjudicate(self, request, name=None, format=None):
        """Settle one query's label with a reason (recorded with who and when); repeating it is harmless."""
        batch = self.get_object()
        data = checked(AdjudicateRequestSerializer, request.data)
        adjudication = adjudication_services.adjudicate(batch, data["qid"], data["label"], data["reason"], request.user)
        return Response(AdjudicationSerializer(adjudication).data)

    @extend_schema(request=ExportRequestSerializer, responses={201: ExportSerializer})
    @action(detail=True, methods=["post"])
    def export(self, request, name=None, format=None):
        """Export the labelled queries of one category; ``download`` in the answer returns the file."""
        batch = self.get_object()
        data = checked(ExportRequestSerializer, request.data)
        export = export_for_download(
            batch, data["category"], data["format"], as_query_set=data.get("as_query_set") or None
        )
        return Response(ExportSerializer(export).data, status=status.HTTP_201_CREATED)


class HitViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Hit.objects.select_related("batch").prefetch_related("hit_queries__batch_query")
    serializer_class = HitSerializer
    permission_classes = [permissions.IsAdminUser]


class AssignmentViewSet(viewsets.ReadOnlyModelViewSet):
    """Staff see every assignment; an annotator sees only their own."""

    serializer_class = AssignmentSerializer
    #: For the schema: the queryset depends on the requester, its model does not.
    queryset = Assignment.objects.none()

    def get_queryset(self):
        queryset = Assignment.objects.select_related("hit__batch", "worker").prefetch_related("judgments__batch_query")
        if not self.request.user.is_staff:
            queryset = queryset.filter(worker__identity__user=self.request.user)
        return queryset.order_by("pk")


class JudgmentViewSet(viewsets.ReadOnlyModelViewSet):
    """Staff see every judgment; an annotator sees only their own."""

    serializer_class = JudgmentSerializer
    queryset = Judgment.objects.none()  # as AssignmentViewSet's

    def get_queryset(self):
        queryset = Judgment.objects.select_related("batch_query", "assignment__worker", "assignment__hit__batch")
        if not self.request.user.is_staff:
            queryset = queryset.filter(assignment__worker__identity__user=self.request.user)
        batch = self.request.query_params.get("batch")
        if batch:
            queryset = queryset.filter(batch_query__batch__name=batch)
        return queryset.order_by("pk")


class ExportViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Export.objects.select_related("batch", "query_set")
    serializer_class = ExportSerializer
    permission_classes = [permissions.IsAdminUser]

    @extend_schema(responses={(200, "application/octet-stream"): bytes})
    @action(detail=True)
    def download(self, request, pk=None, format=None):
        """The exported file (``?part=card``: its dataset card), streamed as an attachment."""
        part = request.query_params.get("part", "file")
        if part not in ("file", "card"):
            raise ValidationError({"part": "choose file or card"})
        return export_file_response(self.get_object(), part)

"""REST endpoints of the pooling app: what was imported and pooled (read-only), and imports.

Staff only: query sets include annotation exports (the crowd's labels) and pools the
rankers' gender lists, neither of which an annotator may see.
"""

from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api import StagedUploadsMixin, form_errors
from core.errors import ServiceError
from core.serializers import JobSerializer

from . import services
from .forms import ImportForm
from .models import Collection, Pool, QuerySet, Run
from .serializers import (
    CollectionSerializer,
    PoolEntrySerializer,
    PoolSerializer,
    QuerySerializer,
    QuerySetSerializer,
    RunSerializer,
)


class StaffReadOnly(viewsets.ReadOnlyModelViewSet):
    permission_classes = [permissions.IsAdminUser]


class CollectionViewSet(StaffReadOnly):
    queryset = Collection.objects.all()
    serializer_class = CollectionSerializer
    lookup_field = "name"


class QuerySetViewSet(StaffReadOnly):
    queryset = QuerySet.objects.all()
    serializer_class = QuerySetSerializer
    lookup_field = "name"

    @extend_schema(responses=QuerySerializer(many=True))
    @action(detail=True)
    def queries(self, request, name=None):
        """The queries of the set, in file order (paginated)."""
        queries = self.get_object().queries.order_by("position")
        page = self.paginate_queryset(queries)
        return self.get_paginated_response(QuerySerializer(page, many=True).data)


class RunViewSet(StaffReadOnly):
    queryset = Run.objects.select_related("collection")
    serializer_class = RunSerializer
    lookup_field = "name"


class PoolViewSet(StaffReadOnly):
    queryset = Pool.objects.select_related("source", "queries", "wordlist").prefetch_related("runs")
    serializer_class = PoolSerializer
    lookup_field = "name"

    @extend_schema(responses=PoolEntrySerializer(many=True))
    @action(detail=True)
    def entries(self, request, name=None):
        """Provenance: per pooled query and run, its RaB and its positions in the two lists."""
        entries = self.get_object().entries.select_related("query", "run").order_by("query__position", "run__name")
        page = self.paginate_queryset(entries)
        return self.get_paginated_response(PoolEntrySerializer(page, many=True).data)


class ImportRequestSerializer(serializers.Serializer):
    """What an import takes (documentation of the form below; ``file`` or ``path``, not both)."""

    name = serializers.SlugField()
    file = serializers.FileField(required=False, help_text="The file (multipart upload; .gz accepted).")
    path = serializers.CharField(required=False, help_text="Or an absolute path inside IMPORT_ROOTS.")
    collection = serializers.CharField(required=False, help_text="Runs only: the collection the run ranks.")
    order = serializers.ChoiceField(choices=Run.Order.choices, required=False, help_text="Runs only.")
    skip_bad_lines = serializers.BooleanField(required=False)


class ImportView(StagedUploadsMixin, APIView):
    """``POST /api/pooling/imports/<kind>/``: import a collection, query set, run or word list.

    The upload streams into the staging folder (as on the page); the import runs as a job
    whose record is returned (202) for polling at ``/api/jobs/<id>/``. The rules are the
    import page's form, so the page and the API accept and refuse the same requests.
    """

    permission_classes = [permissions.IsAdminUser]
    parser_classes = [MultiPartParser, FormParser, JSONParser]

    @extend_schema(request={"multipart/form-data": ImportRequestSerializer}, responses={202: JobSerializer})
    def post(self, request, kind: str):
        if kind not in services.IMPORT_KINDS:
            raise ValidationError({"kind": f"choose one of {', '.join(services.IMPORT_KINDS)}"})
        data, files = request.data, request.FILES  # parse the body first: it sets upload_too_large
        too_large = getattr(request._request, "upload_too_large", None)
        form = ImportForm(kind, data, files, too_large=too_large)
        if not form.is_valid():
            raise form_errors(form)
        try:
            job = form.start()
        except ServiceError as exc:
            raise ValidationError({"detail": str(exc)}) from None
        response = Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)
        response["Location"] = reverse("job-detail", args=[job.pk])
        return response

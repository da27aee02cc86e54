"""REST endpoints of the annotation app.

Researchers (staff) see batches, HITs, every assignment and judgment, agreement and
exports, and can start publishing, syncing and exports. Annotators reach only their own
assignments and judgments. Workers are named by pseudonym everywhere.
"""

from core.storage import cache_dir
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from . import services
from .models import Assignment, Batch, Export, Hit, Judgment
from .serializers import (
    AgreementSerializer,
    AssignmentSerializer,
    BatchProgressSerializer,
    BatchSerializer,
    ExportRequestSerializer,
    ExportSerializer,
    HitSerializer,
    JobStartedSerializer,
    JudgmentSerializer,
)


def _job_response(job) -> Response:
    data = {"job": job.pk, "url": reverse("core:job-progress", args=[job.pk])}
    return Response(JobStartedSerializer(data).data, status=status.HTTP_202_ACCEPTED)


class BatchViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Batch.objects.select_related("query_set", "pool")
    serializer_class = BatchSerializer
    permission_classes = [permissions.IsAdminUser]
    lookup_field = "name"

    @extend_schema(responses=BatchProgressSerializer)
    @action(detail=True)
    def progress(self, request, name=None):
        """HITs published, assignments handed out, submitted, approved and rejected, judgments."""
        return Response(BatchProgressSerializer(services.batch_progress(self.get_object())).data)

    @extend_schema(responses=AgreementSerializer)
    @action(detail=True)
    def agreement(self, request, name=None):
        """Krippendorff's alpha and the rest of the agreement report (pseudonymous per-worker rows)."""
        return Response(services.agreement(self.get_object(), bootstrap=200))

    @extend_schema(responses=HitSerializer(many=True))
    @action(detail=True)
    def hits(self, request, name=None):
        hits = self.get_object().hits.order_by("position").prefetch_related("hit_queries__batch_query")
        page = self.paginate_queryset(hits)
        return self.get_paginated_response(HitSerializer(page, many=True).data)

    @extend_schema(request=None, responses={202: JobStartedSerializer})
    @action(detail=True, methods=["post"])
    def publish(self, request, name=None):
        """Publish the batch's HITs as a background job; poll the returned URL."""
        return _job_response(services.start_publish(self.get_object()))

    @extend_schema(request=None, responses={202: JobStartedSerializer})
    @action(detail=True, methods=["post"])
    def sync(self, request, name=None):
        """Fetch and review assignments as a background job; poll the returned URL."""
        return _job_response(services.start_sync(self.get_object()))

    @extend_schema(request=ExportRequestSerializer, responses={201: ExportSerializer})
    @action(detail=True, methods=["post"])
    def export(self, request, name=None):
        """Write the labelled queries of one category under the site's export directory."""
        batch = self.get_object()
        params = ExportRequestSerializer(data=request.data)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        path = cache_dir("exports", batch.name) / f"{data['category']}.{data['format']}"
        try:
            export = services.export_queries(
                batch, data["category"], path, data["format"], as_query_set=data.get("as_query_set") or None
            )
        except services.ServiceError as exc:
            raise ValidationError({"detail": str(exc)}) from None
        return Response(ExportSerializer(export).data, status=status.HTTP_201_CREATED)


class HitViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = Hit.objects.select_related("batch").prefetch_related("hit_queries__batch_query")
    serializer_class = HitSerializer
    permission_classes = [permissions.IsAdminUser]


class AssignmentViewSet(viewsets.ReadOnlyModelViewSet):
    """Staff see every assignment; an annotator sees only their own."""

    serializer_class = AssignmentSerializer

    def get_queryset(self):
        queryset = Assignment.objects.select_related("hit__batch", "worker").prefetch_related("judgments__batch_query")
        if not self.request.user.is_staff:
            queryset = queryset.filter(worker__identity__user=self.request.user)
        return queryset.order_by("pk")


class JudgmentViewSet(viewsets.ReadOnlyModelViewSet):
    """Staff see every judgment; an annotator sees only their own."""

    serializer_class = JudgmentSerializer

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

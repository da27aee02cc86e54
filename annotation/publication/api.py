"""``POST /api/annotation/batches/<name>/dataset/``: the batch's dataset folder as a zip (researchers only)."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import permissions
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.views import APIView

from annotation.models import Batch
from annotation.publication.serializers import PublishDatasetRequestSerializer
from annotation.publication.services.dataset import publication_zip
from annotation.publication.views import zip_response
from core.api import ErrorSerializer, body_object, checked


class PublishDatasetView(APIView):
    """The Hugging Face-ready dataset folder (Parquet configurations, README.md, croissant.json), zipped."""

    permission_classes = [permissions.IsAdminUser]
    parser_classes = [JSONParser, FormParser, MultiPartParser]

    @extend_schema(
        request=PublishDatasetRequestSerializer,
        responses={
            (200, "application/zip"): OpenApiResponse(bytes, description="the dataset folder as a zip"),
            400: ErrorSerializer,
            403: ErrorSerializer,
            404: ErrorSerializer,
        },
    )
    def post(self, request, name: str, format=None):
        """Write the dataset folder for ``name`` and answer it as a zip (``license`` required, no default)."""
        batch = get_object_or_404(Batch, name=name)
        data = checked(PublishDatasetRequestSerializer, body_object(request))
        file_name, archive = publication_zip(
            batch,
            data["license"],
            data["with_judgments"],
            license_name=data.get("license_name"),
            license_link=data.get("license_link"),
        )
        return zip_response(file_name, archive)

"""The publishing endpoints (researchers only): ``POST /api/annotation/batches/<name>/dataset/``, the batch's
dataset folder as a zip; ``GET /api/metrics/reports/<name>/paper/``, the report's paper bundle as a zip."""

from django.http import FileResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import permissions
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Batch
from core.api import ErrorSerializer, body_object, checked, job_started
from core.errors import ServiceError, StateError
from core.serializers import JobSerializer
from core.templatetags.roles import may_act
from metrics.models import Report
from publishing.latex import TEMPLATES
from publishing.latex import template as latex_template
from publishing.serializers import PublishDatasetRequestSerializer
from publishing.services.dataset import publication_zip
from publishing.services.paper import cached_paper_zip, start_paper_bundle
from publishing.views import zip_response


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
        file_name, archive = publication_zip(batch, **data)
        return zip_response(file_name, archive)


class ReportPaperView(APIView):
    """The report's paper bundle, zipped (``GET /api/metrics/reports/<name>/paper/``)."""

    permission_classes = [permissions.IsAdminUser]  # reports reveal the crowd's labels: researchers only

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "template",
                str,
                enum=list(TEMPLATES),
                description="The class main.tex is set in and the page the floats fit: acm (acmart sigconf), "
                "lncs (llncs) or article (default).",
            )
        ],
        responses={(200, "application/zip"): OpenApiTypes.BINARY, 202: JobSerializer, 409: ErrorSerializer},
    )
    def get(self, request, name: str, format=None):
        """The report's paper bundle as a zip (``publishing.services.paper``): its papers' tables as LaTeX
        (booktabs, the same marks and p-values as ``table``), its figures as PDF, ``methods.tex`` from the
        study's facts, ``references.bib`` and a ``main.tex`` that compiles. Built once in a background
        job: until it is ready, 202 with the job (``Location``: where to poll it); ask again when it is
        ``done``. 404 with ``detail`` if the report's files are gone; 409 with ``detail`` for a viewer when it
        is neither built nor being built (a viewer's request starts no job)."""
        report = get_object_or_404(Report, name=name)
        template = request.query_params.get("template") or None
        try:
            latex_template(template)  # the one check of the name (its message names the choices)
        except ValueError as exc:
            return Response({"template": [str(exc)]}, status=400)
        path = cached_paper_zip(report, template)
        if path is not None:
            suffix = "" if template is None else f"-{template}"
            return FileResponse(path.open("rb"), as_attachment=True, filename=f"{report.name}-paper{suffix}.zip")
        try:
            job = start_paper_bundle(report, template, may_start=may_act(request.user, report))
        except StateError as exc:  # a viewer, and no job under way
            return Response({"detail": str(exc)}, status=409)
        except ServiceError as exc:
            return Response({"detail": str(exc)}, status=404)
        return job_started(job)

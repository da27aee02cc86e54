"""``GET /api/annotation/batches/<name>/prolific-submissions/``: what Prolific's dashboard shows of each
submission (status, time taken, effective hourly rate) beside this site's quality figures."""

from dataclasses import asdict

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import permissions
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Batch, Provider
from annotation.platforms.prolific.selectors import submissions
from annotation.platforms.prolific.serializers import SubmissionsSerializer
from core.api import ErrorSerializer


class SubmissionsView(APIView):
    """A Prolific batch's submissions as Prolific listed them at the last sync."""

    permission_classes = [permissions.IsAdminUser]

    @extend_schema(responses={200: SubmissionsSerializer, 404: ErrorSerializer})
    def get(self, request, name: str, format=None):
        """Each submission's status, time taken and effective hourly rate, with gold and answers; counts and medians."""
        batch = get_object_or_404(Batch, name=name)
        if batch.provider != Provider.PROLIFIC:
            return Response({"detail": f"batch {name!r} is not a Prolific batch"}, status=404)
        return Response(SubmissionsSerializer(asdict(submissions(batch))).data)

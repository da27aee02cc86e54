"""``GET /api/annotation/batches/<name>/prolific-submissions/``: what Prolific's dashboard shows of each
submission (status, time taken, effective hourly rate) beside this site's quality figures."""

from dataclasses import asdict

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import permissions
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Batch, Provider
from core.api import ErrorSerializer, body_object, checked, job_started
from core.serializers import JobSerializer
from platforms.prolific.bonuses import services as prolific_bonuses
from platforms.prolific.bonuses.selectors import preview_bonuses
from platforms.prolific.selectors import submissions
from platforms.prolific.serializers import (
    BonusPayRequestSerializer,
    BonusPreviewSerializer,
    BonusRuleRequestSerializer,
    SubmissionsSerializer,
)


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


# -- Prolific bonuses --------------------------------------------------------------------------
def _preview_data(batch: Batch) -> dict:
    preview = preview_bonuses(batch)
    return {
        "rule": preview.rule.as_options() if preview.rule else None,
        "rows": [{**row, "amount": str(row["amount"])} for row in preview.rows],
        "to_pay": asdict(preview.to_pay),
        "paid": asdict(preview.paid),
        "unconfirmed": preview.unconfirmed,
        "needs_person": preview.needs_person,
    }


class BonusPreviewView(APIView):
    """A Prolific batch's bonus rule and what it owes, with the total and Prolific's fee, before paying."""

    permission_classes = [permissions.IsAdminUser]
    parser_classes = [JSONParser, FormParser, MultiPartParser]

    @extend_schema(responses={200: BonusPreviewSerializer, 400: ErrorSerializer, 404: ErrorSerializer})
    def get(self, request, name: str, format=None):
        """The bonuses the rule owes each approved participant, what a pay would send now and its cost with fees."""
        return Response(BonusPreviewSerializer(_preview_data(get_object_or_404(Batch, name=name))).data)

    @extend_schema(
        request=BonusRuleRequestSerializer,
        responses={200: BonusPreviewSerializer, 400: ErrorSerializer, 409: ErrorSerializer},
    )
    def put(self, request, name: str, format=None):
        """Set the batch's bonus rule (refused once bonuses were recorded under another); answers the preview."""
        batch = get_object_or_404(Batch, name=name)
        data = checked(BonusRuleRequestSerializer, body_object(request))
        prolific_bonuses.set_bonus_rule(batch, data["kind"], data["amount"])
        batch.refresh_from_db()
        return Response(BonusPreviewSerializer(_preview_data(batch)).data)


class BonusPayView(APIView):
    """Pay a Prolific batch's bonuses owed, exactly once (see platforms.prolific.bonuses.services)."""

    permission_classes = [permissions.IsAdminUser]
    parser_classes = [JSONParser, FormParser, MultiPartParser]

    @extend_schema(
        request=BonusPayRequestSerializer,
        responses={202: JobSerializer, 400: ErrorSerializer, 409: ErrorSerializer},
    )
    def post(self, request, name: str, format=None):
        """Pay what the rule owes and is not paid yet, as a background job (202; its result: ``paid_now``,
        ``confirmed``, ``unconfirmed``, ``needs_person``); a repeat, or a click while a pay runs (409), pays nothing twice."""
        expected = body_object(request).get("expected_total")
        return job_started(
            prolific_bonuses.start_pay_bonuses(get_object_or_404(Batch, name=name), expected_total=expected)
        )

"""REST endpoints of a batch's expert audit sample (``/api/annotation/batches/<name>/audit/`` …), as on
its pages: members of the batch's group and its trusted labellers read, researchers and trusted
labellers label (blind: an answer carries nothing of the crowd). Refusals: 403 (404 where the batch
is not theirs to see), bad input 400 naming the field, a state that refuses the action 409."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import permissions, status
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.audit import selectors
from annotation.audit.serializers import (
    AuditImportRequestSerializer,
    AuditItemSerializer,
    AuditSampleSerializer,
    DrawRequestSerializer,
    LabelRequestSerializer,
    TrustRequestSerializer,
)
from annotation.audit.services.samples import draw_audit_sample, import_audit_labels, label_audit_query, trust_labeller
from annotation.models import Batch
from core.api import ErrorSerializer, StagedUploadsMixin, body_object, checked


def _posts(request, answer=AuditSampleSerializer):
    """The schema of an audit action: its request, its answer, and its refusals (bad input, not allowed, state)."""
    refusals = dict.fromkeys((400, 403, 409), ErrorSerializer)
    return extend_schema(request=request, responses={200: answer, **refusals})


class _AuditView(APIView):
    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [JSONParser, FormParser]

    def batch(self, request, name: str) -> Batch:
        return selectors.readable_batch(request.user, name)

    def state(self, batch: Batch, code: int = status.HTTP_200_OK) -> Response:
        data = selectors.audit_progress(batch) | {"items": selectors.audit_items(batch)}
        return Response(AuditSampleSerializer(data).data, status=code)


class AuditSampleView(_AuditView):
    @extend_schema(responses={200: AuditSampleSerializer, 403: ErrorSerializer, 404: ErrorSerializer})
    def get(self, request, name: str, format=None):
        """The audit sample's state and its audited queries, in draw order, with their expert labels."""
        return self.state(self.batch(request, name))

    @extend_schema(
        request=DrawRequestSerializer,
        responses={200: AuditSampleSerializer, 201: AuditSampleSerializer, 400: ErrorSerializer, 409: ErrorSerializer},
    )
    def post(self, request, name: str, format=None):
        """Draw the audit sample (201), or extend it with its own seed and a larger size (200)."""
        batch = self.batch(request, name)
        data = checked(DrawRequestSerializer, body_object(request))
        existed = selectors.audit_sample(batch) is not None
        draw_audit_sample(
            batch, by=request.user, size=data.get("size"), seed=data.get("seed"), expected_share=data["expected_share"]
        )
        return self.state(batch, status.HTTP_200_OK if existed else status.HTTP_201_CREATED)


class AuditLabelView(_AuditView):
    @_posts(LabelRequestSerializer, AuditItemSerializer)
    def post(self, request, name: str, format=None):
        """Record the caller's expert label of one audited query."""
        batch = self.batch(request, name)
        data = checked(LabelRequestSerializer, body_object(request))
        item = label_audit_query(batch, data["qid"], data["label"], by=request.user)
        row = next(row for row in selectors.audit_items(batch) if row["index"] == item.draw_index)
        return Response(AuditItemSerializer(row).data)


class AuditImportView(StagedUploadsMixin, _AuditView):
    parser_classes = [MultiPartParser, FormParser]

    @_posts({"multipart/form-data": AuditImportRequestSerializer})
    def post(self, request, name: str, format=None):
        """Import expert labels from a file: every line or none."""
        batch = self.batch(request, name)
        data = checked(AuditImportRequestSerializer, body_object(request))  # a multipart body holds the file too
        upload = data["file"]
        import_audit_labels(batch, upload.staged_path, by=request.user, name=upload.name)
        return self.state(batch)


class AuditTrustView(_AuditView):
    @_posts(TrustRequestSerializer)
    def post(self, request, name: str, format=None):
        """Name (or un-name) a member of the group as trusted to label the audit sample."""
        batch = self.batch(request, name)
        data = checked(TrustRequestSerializer, body_object(request))
        trust_labeller(batch, data["username"], by=request.user, trusted=data["trusted"])
        return self.state(batch)

"""REST endpoints of the team of in-house annotators (researchers only), as on the Team page; a link or
password is returned once (no-store)."""

from django.shortcuts import get_object_or_404
from django.utils.cache import add_never_cache_headers
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, JSONParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.models import Batch, Provider
from core.api import ErrorSerializer, body_object, checked
from platforms.inhouse.selectors import team_members, team_progress, unfillable_places
from platforms.inhouse.serializers import (
    AccessRequestSerializer,
    AccessSerializer,
    AnnotatorRequestSerializer,
    AnnotatorSerializer,
    BatchTeamSerializer,
    TeamRequestSerializer,
)
from platforms.inhouse.services import team


def _access_response(request, access: team.Access, code: int) -> Response:
    data = {
        "user": access.user,
        "password": access.password,
        "link": request.build_absolute_uri(access.link_path) if access.link_path else None,
        "link_expires": access.link_expires,
    }
    response = Response(AccessSerializer(data).data, status=code)
    add_never_cache_headers(response)  # no-store: the password or link is shown this once
    return response


class AnnotatorViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    queryset = team_members().prefetch_related("annotation_team_batches")
    serializer_class = AnnotatorSerializer
    permission_classes = [permissions.IsAdminUser]
    parser_classes = [JSONParser, FormParser]
    lookup_field = "username"
    lookup_value_regex = r"[\w.@+-]+"

    def get_queryset(self):
        return team_members().prefetch_related("annotation_team_batches")  # per request: its groups' annotators

    @extend_schema(request=AnnotatorRequestSerializer, responses={201: AccessSerializer, 400: ErrorSerializer})
    def create(self, request, *args, **kwargs):
        """Add an annotator; the answer holds their one-time link or generated password, once."""
        data = checked(AnnotatorRequestSerializer, body_object(request))
        access = team.add_member(data["username"], data["email"], access=data["access"])
        return _access_response(request, access, status.HTTP_201_CREATED)

    @extend_schema(request=AccessRequestSerializer, responses={200: AccessSerializer, 400: ErrorSerializer})
    @action(detail=True, methods=["post"], url_path="reset-password")
    def reset_password(self, request, username=None, format=None):
        """The old password and links stop working; a new one-time link or password, shown once."""
        member = self.get_object()
        data = checked(AccessRequestSerializer, body_object(request))
        return _access_response(
            request, team.reset_access(member, access=data["access"], by=request.user), status.HTTP_200_OK
        )

    @extend_schema(request=None, responses=AnnotatorSerializer)
    @action(detail=True, methods=["post"])
    def deactivate(self, request, username=None, format=None):
        """No more logins or HITs; their sessions and one-time links end for good (a later activation
        does not bring them back); HITs they hold go back to the queue (repeating it is harmless)."""
        return Response(AnnotatorSerializer(team.set_active(self.get_object(), False, by=request.user)).data)

    @extend_schema(request=None, responses=AnnotatorSerializer)
    @action(detail=True, methods=["post"])
    def activate(self, request, username=None, format=None):
        """Let a deactivated annotator log in and take HITs again (sessions and links from before stay ended)."""
        return Response(AnnotatorSerializer(team.set_active(self.get_object(), True, by=request.user)).data)


class BatchTeamView(APIView):
    permission_classes = [permissions.IsAdminUser]
    parser_classes = [JSONParser, FormParser]

    def _batch(self, name: str) -> Batch:
        return get_object_or_404(Batch, name=name, provider=Provider.LOCAL)

    def _answer(self, batch: Batch) -> Response:
        data = {
            "batch": batch.name,
            "restricted": batch.team.exists(),
            "annotators": list(batch.team.order_by("username").values_list("username", flat=True)),
            "progress": team_progress(batch),
            "unfillable": unfillable_places(batch),
        }
        return Response(BatchTeamSerializer(data).data)

    @extend_schema(responses={200: BatchTeamSerializer, 404: ErrorSerializer})
    def get(self, request, name: str, format=None):
        """Who may work on the local batch, and each annotator's progress and quality on it."""
        return self._answer(self._batch(name))

    @extend_schema(request=TeamRequestSerializer, responses={200: BatchTeamSerializer, 400: ErrorSerializer})
    def put(self, request, name: str, format=None):
        """Restrict the local batch to these annotators (an empty list opens it to every annotator)."""
        batch = self._batch(name)
        team.set_batch_team(batch, checked(TeamRequestSerializer, body_object(request))["annotators"])
        return self._answer(batch)

"""The in-house platform's REST endpoints, under ``api/annotation/`` (config/urls.py)."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from platforms.inhouse import api as api_team

router = DefaultRouter()  # with its format suffixes (``.json``), as annotation's own endpoints
router.include_root_view = False  # the one API root of /api/annotation/ is annotation's router's
router.register("annotators", api_team.AnnotatorViewSet, basename="annotator")

urlpatterns = [
    path("batches/<slug:name>/team/", api_team.BatchTeamView.as_view(), name="api-batch-team"),
    *router.urls,
]

"""The in-house platform's REST endpoints, under ``api/annotation/`` (config/urls.py)."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from platforms.inhouse import api as api_team

router = SimpleRouter()
router.register("annotators", api_team.AnnotatorViewSet, basename="annotator")

urlpatterns = [
    path("batches/<slug:name>/team/", api_team.BatchTeamView.as_view(), name="api-batch-team"),
    *router.urls,
]

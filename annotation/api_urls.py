"""REST endpoints of the annotation app."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from . import api, api_team

router = DefaultRouter()
router.register("batches", api.BatchViewSet)
router.register("hits", api.HitViewSet)
router.register("assignments", api.AssignmentViewSet, basename="assignment")
router.register("judgments", api.JudgmentViewSet, basename="judgment")
router.register("exports", api.ExportViewSet)
router.register("annotators", api_team.AnnotatorViewSet, basename="annotator")

urlpatterns = [
    path("batches/<slug:name>/team/", api_team.BatchTeamView.as_view(), name="api-batch-team"),
    *router.urls,
]

"""REST endpoints of the annotation app."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from annotation.batches import api
from annotation.machine import api as api_prelabelling
from annotation.platforms.inhouse import api as api_team
from annotation.platforms.prolific import api as api_prolific

router = DefaultRouter()
router.register("batches", api.BatchViewSet)
router.register("hits", api.HitViewSet)
router.register("assignments", api.AssignmentViewSet, basename="assignment")
router.register("judgments", api.JudgmentViewSet, basename="judgment")
router.register("exports", api.ExportViewSet)
router.register("annotators", api_team.AnnotatorViewSet, basename="annotator")

urlpatterns = [
    path("batches/<slug:name>/team/", api_team.BatchTeamView.as_view(), name="api-batch-team"),
    # Machine pre-labelling, calibration and routing (api_prelabelling.py).
    path("batches/<slug:name>/prelabel/", api_prelabelling.PrelabelView.as_view(), name="api-batch-prelabel"),
    path("batches/<slug:name>/prelabels/", api_prelabelling.PrelabelRunsView.as_view(), name="api-batch-prelabels"),
    path(
        "batches/<slug:name>/calibration-sample/",
        api_prelabelling.CalibrationSampleView.as_view(),
        name="api-batch-calibration-sample",
    ),
    path(
        "batches/<slug:name>/calibration/",
        api_prelabelling.CalibrationReportView.as_view(),
        name="api-batch-calibration",
    ),
    path("batches/<slug:name>/routing/", api_prelabelling.RoutingView.as_view(), name="api-batch-routing"),
    path("prelabel-cache/", api_prelabelling.PrelabelCacheView.as_view(), name="api-prelabel-cache"),
    path(
        "prelabel-cache/<key:model>/",
        api_prelabelling.PrelabelCacheModelView.as_view(),
        name="api-prelabel-cache-model",
    ),
    # Prolific bonuses (issue 32).
    path("batches/<slug:name>/bonuses/", api.BonusPreviewView.as_view(), name="api-batch-bonuses"),
    path("batches/<slug:name>/bonuses/pay/", api.BonusPayView.as_view(), name="api-batch-bonuses-pay"),
    path(
        "batches/<slug:name>/prolific-submissions/",
        api_prolific.SubmissionsView.as_view(),
        name="api-batch-prolific-submissions",
    ),
    *router.urls,
]

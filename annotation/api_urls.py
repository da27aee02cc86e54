"""REST endpoints of the annotation app (each crowd platform's own: platforms/<name>/api_urls.py)."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from annotation.audit import api as api_audit
from annotation.batches import api
from annotation.machine import api as api_prelabelling

router = DefaultRouter()
router.register("batches", api.BatchViewSet)
router.register("hits", api.HitViewSet)
router.register("assignments", api.AssignmentViewSet, basename="assignment")
router.register("judgments", api.JudgmentViewSet, basename="judgment")
router.register("exports", api.ExportViewSet)

urlpatterns = [
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
    path(
        "batches/<slug:name>/calibration/echo/",
        api_prelabelling.EchoReviewView.as_view(),
        name="api-batch-calibration-echo",
    ),
    path("batches/<slug:name>/routing/", api_prelabelling.RoutingView.as_view(), name="api-batch-routing"),
    # The expert audit sample (annotation/audit/api.py).
    path("batches/<slug:name>/audit/", api_audit.AuditSampleView.as_view(), name="api-batch-audit"),
    path("batches/<slug:name>/audit/labels/", api_audit.AuditLabelView.as_view(), name="api-batch-audit-labels"),
    path("batches/<slug:name>/audit/import/", api_audit.AuditImportView.as_view(), name="api-batch-audit-import"),
    path("batches/<slug:name>/audit/trusted/", api_audit.AuditTrustView.as_view(), name="api-batch-audit-trusted"),
    path("prelabel-cache/", api_prelabelling.PrelabelCacheView.as_view(), name="api-prelabel-cache"),
    path(
        "prelabel-cache/<key:model>/",
        api_prelabelling.PrelabelCacheModelView.as_view(),
        name="api-prelabel-cache-model",
    ),
    *router.urls,
]

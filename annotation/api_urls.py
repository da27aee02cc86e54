"""REST endpoints of the annotation app (each crowd platform's own: platforms/<name>/api_urls.py)."""

from django.urls import include, path
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

#: Machine pre-labelling, calibration and routing (annotation/machine/api.py), then the expert audit sample
#: (annotation/audit/api.py), each under ``batches/<name>/``.
batch_urls = [
    path("prelabel/", api_prelabelling.PrelabelView.as_view(), name="api-batch-prelabel"),
    path("prelabels/", api_prelabelling.PrelabelRunsView.as_view(), name="api-batch-prelabels"),
    path("calibration-sample/", api_prelabelling.CalibrationSampleView.as_view(), name="api-batch-calibration-sample"),
    path("calibration/", api_prelabelling.CalibrationReportView.as_view(), name="api-batch-calibration"),
    path("calibration/echo/", api_prelabelling.EchoReviewView.as_view(), name="api-batch-calibration-echo"),
    path("routing/", api_prelabelling.RoutingView.as_view(), name="api-batch-routing"),
    path("audit/", api_audit.AuditSampleView.as_view(), name="api-batch-audit"),
    path("audit/labels/", api_audit.AuditLabelView.as_view(), name="api-batch-audit-labels"),
    path("audit/import/", api_audit.AuditImportView.as_view(), name="api-batch-audit-import"),
    path("audit/trusted/", api_audit.AuditTrustView.as_view(), name="api-batch-audit-trusted"),
]

urlpatterns = [
    path("batches/<slug:name>/", include(batch_urls)),
    path("prelabel-cache/", api_prelabelling.PrelabelCacheView.as_view(), name="api-prelabel-cache"),
    path(
        "prelabel-cache/<key:model>/",
        api_prelabelling.PrelabelCacheModelView.as_view(),
        name="api-prelabel-cache-model",
    ),
    *router.urls,
]

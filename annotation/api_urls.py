"""REST endpoints of the annotation app."""

from rest_framework.routers import DefaultRouter

from . import api

router = DefaultRouter()
router.register("batches", api.BatchViewSet)
router.register("hits", api.HitViewSet)
router.register("assignments", api.AssignmentViewSet, basename="assignment")
router.register("judgments", api.JudgmentViewSet, basename="judgment")
router.register("exports", api.ExportViewSet)

urlpatterns = router.urls

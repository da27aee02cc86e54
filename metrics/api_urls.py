"""REST endpoints of the metrics app."""

from rest_framework.routers import DefaultRouter

from . import api

router = DefaultRouter()
router.register("reports", api.ReportViewSet, basename="report")

urlpatterns = router.urls

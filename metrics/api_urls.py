"""REST endpoints of the metrics app."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from . import api

router = DefaultRouter()
router.register("reports", api.ReportViewSet, basename="report")

urlpatterns = [
    path("label-sensitivity/", api.LabelSensitivityView.as_view(), name="metrics-api-label-sensitivity"),
    *router.urls,
]

"""REST endpoints of the metrics app."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from . import api

router = DefaultRouter()
router.register("reports", api.ReportViewSet, basename="report")

urlpatterns = [
    path("label-sensitivity/", api.LabelSensitivityView.as_view(), name="metrics-api-label-sensitivity"),
    path("crbo/", api.CrboView.as_view(), name="crbo"),
    path("preference/", api.PreferenceView.as_view(), name="preference"),
    path("compare-sets/", api.CompareSetsView.as_view(), name="compare-sets"),
    path("counterfactual-collections/", api.CounterfactualView.as_view(), name="counterfactual"),
    path("plan/", api.PlanView.as_view(), name="metrics-api-plan"),
    *router.urls,
]

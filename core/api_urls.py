"""REST endpoints of the shared app."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from core import api

router = SimpleRouter()
router.register("jobs", api.JobViewSet)

urlpatterns = [
    path("connections/", api.ConnectionListView.as_view(), name="connection-list"),
    path("connections/<slug:kind>/", api.ConnectionDetailView.as_view(), name="connection-detail"),
    path("connections/<slug:kind>/test/", api.ConnectionTestView.as_view(), name="connection-test-api"),
    *router.urls,
]

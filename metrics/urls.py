"""Pages of the metrics app."""

from django.urls import path
from django.views.generic import TemplateView

app_name = "metrics"
urlpatterns = [
    path("", TemplateView.as_view(template_name="base.html"), name="report-list"),  # placeholder
]

"""Pages of the annotation app."""

from django.urls import path
from django.views.generic import TemplateView

app_name = "annotation"
urlpatterns = [
    path("", TemplateView.as_view(template_name="base.html"), name="batch-list"),  # placeholder
]

"""REST endpoints of the publishing app, under the paths and names they always had: config/urls.py adds
:data:`annotation_patterns` under /api/annotation/ and :data:`metrics_patterns` under /api/metrics/."""

from django.urls import path
from rest_framework.urlpatterns import format_suffix_patterns

from publishing import api

#: Under /api/annotation/: the Hugging Face-ready dataset folder, zipped.
annotation_patterns = [
    path("batches/<slug:name>/dataset/", api.PublishDatasetView.as_view(), name="api-batch-dataset"),
]
#: Under /api/metrics/: a report's paper bundle (the path the report router's ``paper`` action had).
metrics_patterns = format_suffix_patterns(
    [path("reports/<slug:name>/paper/", api.ReportPaperView.as_view(), name="report-paper")]
)

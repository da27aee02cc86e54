"""Pages of the publishing app, under the prefixes and names they always had: config/urls.py adds
:data:`annotation_patterns` to the annotation app's pages and :data:`metrics_patterns` to the metrics
app's (``annotation:batch-publish-dataset``, ``metrics:report-paper``)."""

from django.urls import path

from publishing import views

#: Under /annotation/, in the ``annotation`` namespace.
annotation_patterns = [
    path("batches/<slug:name>/dataset/", views.batch_publish_dataset, name="batch-publish-dataset"),
]
#: Under /metrics/, in the ``metrics`` namespace.
metrics_patterns = [
    path("<slug:name>/paper.zip", views.report_paper, name="report-paper"),
]

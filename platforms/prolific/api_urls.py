"""Prolific's REST endpoints, under ``api/annotation/`` (config/urls.py)."""

from django.urls import path

from platforms.prolific import api as api_prolific

urlpatterns = [
    path("batches/<slug:name>/bonuses/", api_prolific.BonusPreviewView.as_view(), name="api-batch-bonuses"),
    path("batches/<slug:name>/bonuses/pay/", api_prolific.BonusPayView.as_view(), name="api-batch-bonuses-pay"),
    path(
        "batches/<slug:name>/prolific-submissions/",
        api_prolific.SubmissionsView.as_view(),
        name="api-batch-prolific-submissions",
    ),
]

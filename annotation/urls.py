"""Pages of the annotation app."""

from django.urls import path

from . import views
from .views import prelabelling, team

app_name = "annotation"
urlpatterns = [
    path("", views.batch_list, name="batch-list"),
    path("live/", views.batch_list_live, name="batch-list-live"),
    path("next/", views.next_hit, name="next"),
    path("assignments/<int:pk>/", views.assignment_page, name="assignment"),
    path("batches/<slug:name>/training/", views.training_page, name="training"),
    path("batches/new/", views.batch_create, name="batch-create"),
    path("batches/new/estimate/", views.batch_estimate, name="batch-estimate"),
    path("prolific/<slug:name>/", views.prolific_start, name="prolific-start"),
    path("prolific/hits/<int:pk>/", views.prolific_hit, name="prolific-hit"),
    path("prolific/<slug:name>/training/", views.prolific_training, name="prolific-training"),
    path("batches/<slug:name>/", views.batch_detail, name="batch-detail"),
    path("batches/<slug:name>/live/", views.batch_live, name="batch-live"),
    path("batches/<slug:name>/publish/", views.batch_publish, name="batch-publish"),
    path("batches/<slug:name>/sync/", views.batch_sync, name="batch-sync"),
    path("batches/<slug:name>/escalate/", views.batch_escalate, name="batch-escalate"),
    path("batches/<slug:name>/cancel/", views.batch_cancel, name="batch-cancel"),
    path("batches/<slug:name>/export/", views.batch_export, name="batch-export"),
    path("exports/<int:pk>/<str:part>/", views.export_download, name="export-download"),
    path("batches/<slug:name>/agreement/", views.batch_agreement, name="batch-agreement"),
    path("batches/<slug:name>/review/", views.batch_review, name="batch-review"),
    # <key:qid>: any query id (a/b, .., é q) as one segment, escaped by core.converters.
    path("batches/<slug:name>/queries/<key:qid>/", views.batch_query, name="batch-query"),
    path("batches/<slug:name>/hits/<int:position>/preview/", views.hit_preview, name="hit-preview"),
    # Machine pre-labelling, calibration and routing (views/prelabelling.py).
    path("batches/<slug:name>/machine/", prelabelling.batch_machine, name="batch-machine"),
    path("batches/<slug:name>/machine/prelabel/", prelabelling.batch_prelabel, name="batch-prelabel"),
    path("batches/<slug:name>/machine/cache/", prelabelling.batch_prelabel_cache, name="batch-prelabel-cache"),
    path(
        "batches/<slug:name>/machine/calibration-sample/",
        prelabelling.batch_calibration_sample,
        name="batch-calibration-sample",
    ),
    path("batches/<slug:name>/calibration/", prelabelling.batch_calibration, name="batch-calibration"),
    path("batches/<slug:name>/calibration/live/", prelabelling.batch_calibration_live, name="batch-calibration-live"),
    path("batches/<slug:name>/routing/", prelabelling.batch_routing, name="batch-routing"),
    # The team of in-house annotators (views/team.py).
    path("team/", team.team_page, name="team"),
    path("team/<str:username>/", team.member_page, name="team-member"),
    path("team/<str:username>/access/", team.member_access, name="team-member-access"),
    path("team/<str:username>/active/", team.member_active, name="team-member-active"),
    path("batches/<slug:name>/team/", team.batch_team, name="batch-team"),
    path("batches/<slug:name>/team/progress/", team.batch_team_progress, name="batch-team-progress"),
    path("welcome/<uidb64>/<token>/", team.welcome, name="team-welcome"),
]

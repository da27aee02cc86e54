"""Pages of the annotation app."""

from django.urls import path

from annotation.batches import views as batches
from annotation.machine import views as machine
from annotation.platforms.inhouse import views as inhouse
from annotation.platforms.prolific import views as prolific
from annotation.platforms.prolific.webhooks import views as prolific_webhooks
from annotation.quality import views as quality

app_name = "annotation"
urlpatterns = [
    path("", batches.batch_list, name="batch-list"),
    path("live/", batches.batch_list_live, name="batch-list-live"),
    path("next/", inhouse.next_hit, name="next"),
    path("assignments/<int:pk>/", inhouse.assignment_page, name="assignment"),
    path("assignments/<int:pk>/correct/", inhouse.correct_page, name="assignment-correct"),
    path("batches/<slug:name>/training/", inhouse.training_page, name="training"),
    path("batches/new/", batches.batch_create, name="batch-create"),
    path("batches/new/estimate/", batches.batch_estimate, name="batch-estimate"),
    path("prolific/<slug:name>/", prolific.prolific_start, name="prolific-start"),
    path("prolific/hits/<int:pk>/", prolific.prolific_hit, name="prolific-hit"),
    path("prolific/hits/<int:pk>/correct/", prolific.prolific_correct, name="prolific-correct"),
    path("prolific/<slug:name>/training/", prolific.prolific_training, name="prolific-training"),
    # A rehearsal with Prolific's test participants (issue 56): the HIT page, nothing recorded; and its button.
    path("prolific/<slug:name>/rehearsal/", prolific.prolific_rehearsal, name="prolific-rehearsal"),
    path("prolific/<slug:name>/rehearse/", prolific.prolific_rehearse, name="prolific-rehearse"),
    # Two segments: never a batch's study link (prolific/<name>/), whatever the batch's name.
    path("prolific/webhooks/events/", prolific_webhooks.prolific_webhook, name="prolific-webhook"),
    path("batches/<slug:name>/", batches.batch_detail, name="batch-detail"),
    path("batches/<slug:name>/live/", batches.batch_live, name="batch-live"),
    path("batches/<slug:name>/publish/", batches.batch_publish, name="batch-publish"),
    path("batches/<slug:name>/sync/", batches.batch_sync, name="batch-sync"),
    path("batches/<slug:name>/escalate/", batches.batch_escalate, name="batch-escalate"),
    path("batches/<slug:name>/cancel/", batches.batch_cancel, name="batch-cancel"),
    path("batches/<slug:name>/bonuses/rule/", batches.batch_bonus_rule, name="batch-bonus-rule"),
    path("batches/<slug:name>/bonuses/pay/", batches.batch_bonus_pay, name="batch-bonus-pay"),
    path("batches/<slug:name>/export/", batches.batch_export, name="batch-export"),
    path("exports/<int:pk>/<str:part>/", batches.export_download, name="export-download"),
    path("batches/<slug:name>/agreement/", batches.batch_agreement, name="batch-agreement"),
    path("batches/<slug:name>/review/", quality.batch_review, name="batch-review"),
    # <key:qid>: any query id (a/b, .., é q) as one segment, escaped by core.converters.
    path("batches/<slug:name>/queries/<key:qid>/", batches.batch_query, name="batch-query"),
    path("batches/<slug:name>/hits/<int:position>/preview/", batches.hit_preview, name="hit-preview"),
    # Machine pre-labelling, calibration and routing (views/machine.py).
    path("batches/<slug:name>/machine/", machine.batch_machine, name="batch-machine"),
    path("batches/<slug:name>/machine/prelabel/", machine.batch_prelabel, name="batch-prelabel"),
    path("batches/<slug:name>/machine/cache/", machine.batch_prelabel_cache, name="batch-prelabel-cache"),
    path(
        "batches/<slug:name>/machine/calibration-sample/",
        machine.batch_calibration_sample,
        name="batch-calibration-sample",
    ),
    path("batches/<slug:name>/calibration/", machine.batch_calibration, name="batch-calibration"),
    path("batches/<slug:name>/calibration/live/", machine.batch_calibration_live, name="batch-calibration-live"),
    path("batches/<slug:name>/routing/", machine.batch_routing, name="batch-routing"),
    # The team of in-house annotators (inhouse/views.py).
    path("team/", inhouse.team_page, name="team"),
    path("team/<str:username>/", inhouse.member_page, name="team-member"),
    path("team/<str:username>/access/", inhouse.member_access, name="team-member-access"),
    path("team/<str:username>/active/", inhouse.member_active, name="team-member-active"),
    path("batches/<slug:name>/team/", inhouse.batch_team, name="batch-team"),
    path("batches/<slug:name>/team/progress/", inhouse.batch_team_progress, name="batch-team-progress"),
    path("welcome/<uidb64>/<token>/", inhouse.welcome, name="team-welcome"),
]

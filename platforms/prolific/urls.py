"""Prolific's pages, under ``annotation/`` in the ``annotation`` URL namespace (config/urls.py includes
them there: ``annotation:prolific-start`` ...)."""

from django.urls import path

from platforms.prolific import views as prolific
from platforms.prolific.webhooks import views as prolific_webhooks

urlpatterns = [
    path("prolific/<slug:name>/", prolific.prolific_start, name="prolific-start"),
    path("prolific/hits/<int:pk>/", prolific.prolific_hit, name="prolific-hit"),
    path("prolific/hits/<int:pk>/correct/", prolific.prolific_correct, name="prolific-correct"),
    path("prolific/<slug:name>/training/", prolific.prolific_training, name="prolific-training"),
    path("prolific/<slug:name>/rehearsal/", prolific.prolific_rehearsal, name="prolific-rehearsal"),
    path("prolific/<slug:name>/rehearse/", prolific.prolific_rehearse, name="prolific-rehearse"),
    # Two segments: never a batch's study link (prolific/<name>/), whatever the batch's name.
    path("prolific/webhooks/events/", prolific_webhooks.prolific_webhook, name="prolific-webhook"),
    path("batches/<slug:name>/bonuses/rule/", prolific.batch_bonus_rule, name="batch-bonus-rule"),
    path("batches/<slug:name>/bonuses/pay/", prolific.batch_bonus_pay, name="batch-bonus-pay"),
]

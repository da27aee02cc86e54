"""The in-house platform's pages, under ``annotation/`` in the ``annotation`` URL namespace
(config/urls.py includes them there: ``annotation:next``, ``annotation:team`` ...)."""

from django.urls import path

from platforms.inhouse import views as inhouse

urlpatterns = [
    path("next/", inhouse.next_hit, name="next"),
    path("assignments/<int:pk>/", inhouse.assignment_page, name="assignment"),
    path("assignments/<int:pk>/correct/", inhouse.correct_page, name="assignment-correct"),
    path("batches/<slug:name>/training/", inhouse.training_page, name="training"),
    # The team of in-house annotators.
    path("team/", inhouse.team_page, name="team"),
    path("team/<str:username>/", inhouse.member_page, name="team-member"),
    path("team/<str:username>/access/", inhouse.member_access, name="team-member-access"),
    path("team/<str:username>/active/", inhouse.member_active, name="team-member-active"),
    path("batches/<slug:name>/team/", inhouse.batch_team, name="batch-team"),
    path("batches/<slug:name>/team/progress/", inhouse.batch_team_progress, name="batch-team-progress"),
    path("welcome/<uidb64>/<token>/", inhouse.welcome, name="team-welcome"),
]

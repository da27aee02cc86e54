"""Pages of the pooling app."""

from django.urls import path

from . import views

app_name = "pooling"
urlpatterns = [
    path("jobs/<int:pk>/", views.job_progress, name="job-progress"),
]

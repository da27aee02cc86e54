"""Pages of the shared app."""

from django.urls import path

from core import views

app_name = "core"
urlpatterns = [
    path("<int:pk>/", views.job_detail, name="job-detail"),
    path("<int:pk>/progress/", views.job_progress_fragment, name="job-progress-fragment"),
    path("<int:pk>/progress.json", views.job_progress, name="job-progress"),
]

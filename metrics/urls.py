"""Pages of the metrics app."""

from django.urls import path

from . import views

app_name = "metrics"
urlpatterns = [
    path("", views.report_list, name="report-list"),
    path("new/", views.report_create, name="report-create"),
    path("label-sensitivity/", views.label_sensitivity, name="label-sensitivity"),
    path("<slug:name>/", views.report_detail, name="report-detail"),
    path("<slug:name>/results.csv", views.report_csv, name="report-csv"),
    path("<slug:name>/per-query.csv", views.report_per_query_csv, name="report-per-query"),
    path("<slug:name>/<str:kind>.png", views.report_plot, name="report-plot"),
]

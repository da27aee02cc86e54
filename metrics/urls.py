"""Pages of the metrics app."""

from django.urls import path

from . import views
from .views import studies

app_name = "metrics"
urlpatterns = [
    path("", views.report_list, name="report-list"),
    path("new/", views.report_create, name="report-create"),
    path("label-sensitivity/", studies.label_sensitivity, name="label-sensitivity"),
    # Gender-swap measures (before the report routes: a report may not be named crbo).
    path("crbo/", studies.crbo_list, name="crbo"),
    path("crbo/counterfactual/", studies.counterfactual_create, name="counterfactual-create"),
    path("crbo/<int:pk>/", studies.crbo_detail, name="crbo-detail"),
    path("crbo/<int:pk>/rbo.png", studies.crbo_plot, name="crbo-plot"),
    path("crbo/<int:pk>/per-query.csv", studies.crbo_csv, name="crbo-csv"),
    path("preference/", studies.preference_list, name="preference"),
    path("preference/<int:pk>/", studies.preference_detail, name="preference-detail"),
    path("preference/<int:pk>/wins.png", studies.preference_plot, name="preference-plot"),
    # The same runs across query sets (before the report routes: a report may not be named sets).
    path("sets/", studies.sets_list, name="sets"),
    path("sets/<int:pk>/", studies.sets_detail, name="sets-detail"),
    # The batch-creation page's study-plan panel (before the report routes: a report may not be named plan).
    path("plan/", studies.plan_panel, name="plan-panel"),
    path("<slug:name>/", views.report_detail, name="report-detail"),
    path("<slug:name>/rebuild/", views.report_rebuild, name="report-rebuild"),
    path("<slug:name>/results.csv", views.report_csv, name="report-csv"),
    path("<slug:name>/contributions/", views.report_contributions, name="report-contributions"),
    path("<slug:name>/per-query.csv", views.report_per_query_csv, name="report-per-query"),
    path("<slug:name>/<str:kind>.svg", views.report_svg, name="report-svg"),
    path("<slug:name>/<str:kind>.png", views.report_plot, name="report-plot"),
]

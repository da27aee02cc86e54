"""Pages of the metrics app."""

from django.urls import path

from . import views

app_name = "metrics"
urlpatterns = [
    path("", views.report_list, name="report-list"),
    path("new/", views.report_create, name="report-create"),
    path("label-sensitivity/", views.label_sensitivity, name="label-sensitivity"),
    # Gender-swap measures (before the report routes: a report may not be named crbo).
    path("crbo/", views.crbo_list, name="crbo"),
    path("crbo/counterfactual/", views.counterfactual_create, name="counterfactual-create"),
    path("crbo/<int:pk>/", views.crbo_detail, name="crbo-detail"),
    path("crbo/<int:pk>/rbo.png", views.crbo_plot, name="crbo-plot"),
    path("crbo/<int:pk>/per-query.csv", views.crbo_csv, name="crbo-csv"),
    path("preference/", views.preference_list, name="preference"),
    path("preference/<int:pk>/", views.preference_detail, name="preference-detail"),
    path("preference/<int:pk>/wins.png", views.preference_plot, name="preference-plot"),
    # The same runs across query sets (before the report routes: a report may not be named sets).
    path("sets/", views.sets_list, name="sets"),
    path("sets/<int:pk>/", views.sets_detail, name="sets-detail"),
    # The batch-creation page's study-plan panel (before the report routes: a report may not be named plan).
    path("plan/", views.plan_panel, name="plan-panel"),
    path("<slug:name>/", views.report_detail, name="report-detail"),
    path("<slug:name>/rebuild/", views.report_rebuild, name="report-rebuild"),
    path("<slug:name>/results.csv", views.report_csv, name="report-csv"),
    path("<slug:name>/contributions/", views.report_contributions, name="report-contributions"),
    path("<slug:name>/per-query.csv", views.report_per_query_csv, name="report-per-query"),
    path("<slug:name>/<str:kind>.svg", views.report_svg, name="report-svg"),
    path("<slug:name>/<str:kind>.png", views.report_plot, name="report-plot"),
]

"""Pages of the pooling app."""

from django.urls import path

from . import views

app_name = "pooling"
urlpatterns = [
    path("import/", views.import_index, name="import"),
    path("named-sets/", views.named_sets, name="named-sets"),
    path("import/<str:kind>/", views.import_create, name="import-create"),
    path("import/<str:kind>/preview/", views.import_preview, name="import-preview"),
    path("pools/new/", views.pool_create, name="pool-create"),
    path("pools/<slug:name>/", views.pool_detail, name="pool-detail"),
    path("pools/<slug:name>/download.<str:fmt>", views.pool_download, name="pool-download"),
]

"""REST endpoints of the pooling app."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from . import api

router = DefaultRouter()
router.register("collections", api.CollectionViewSet)
router.register("query-sets", api.QuerySetViewSet)
router.register("runs", api.RunViewSet)
router.register("pools", api.PoolViewSet)

urlpatterns = [
    path("imports/<str:kind>/", api.ImportView.as_view(), name="import"),
    path("named-sets/", api.NamedSetView.as_view(), name="named-sets"),
    *router.urls,
]

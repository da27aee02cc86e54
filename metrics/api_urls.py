"""REST endpoints of the metrics app."""

from django.urls import path  # noqa: F401

urlpatterns: list = []

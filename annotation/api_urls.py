"""REST endpoints of the annotation app."""

from django.urls import path  # noqa: F401

urlpatterns: list = []

"""Top-level URLs: one prefix per app for pages, one per app under /api/ for REST."""

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import urls as auth_urls
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from pooling import views as pooling_views

#: Log in and out and change a password always; reset a forgotten one only with a mail server.
account_urls = [
    pattern
    for pattern in auth_urls.urlpatterns
    if settings.PASSWORD_RESET_BY_EMAIL or not pattern.name.startswith("password_reset")
]

urlpatterns = [
    path("", pooling_views.home, name="home"),
    path("admin/", admin.site.urls),
    path("accounts/", include(account_urls)),
    path("jobs/", include("core.urls")),
    path("pooling/", include("pooling.urls")),
    path("annotation/", include("annotation.urls")),
    path("metrics/", include("metrics.urls")),
    path("api/", include("core.api_urls")),
    path("api/pooling/", include("pooling.api_urls")),
    path("api/annotation/", include("annotation.api_urls")),
    path("api/metrics/", include("metrics.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
]

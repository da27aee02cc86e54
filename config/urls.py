"""Top-level URLs: one prefix per app for pages, one per app under /api/ for REST."""

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import urls as auth_urls
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from annotation import api_urls as annotation_api_urls
from annotation import urls as annotation_urls
from annotation.accounts import access_token_generator
from core import views as core_views
from metrics import api_urls as metrics_api_urls
from metrics import urls as metrics_urls
from metrics.views import home as metrics_home
from publishing import api_urls as publishing_api_urls
from publishing import urls as publishing_urls

#: The reset e-mail's link and the page it opens use the tokens that an account's access epoch
#: ends (annotation.accounts): a link mailed before a deactivation stays dead after a reactivation.
_ACCESS_TOKEN_VIEWS = {
    "password_reset": auth_views.PasswordResetView.as_view(token_generator=access_token_generator),
    "password_reset_confirm": auth_views.PasswordResetConfirmView.as_view(token_generator=access_token_generator),
}

#: Log in and out and change a password always; reset a forgotten one only with a mail server.
account_urls = [
    path(str(pattern.pattern), _ACCESS_TOKEN_VIEWS[pattern.name], name=pattern.name)
    if pattern.name in _ACCESS_TOKEN_VIEWS
    else pattern
    for pattern in auth_urls.urlpatterns
    if settings.PASSWORD_RESET_BY_EMAIL or not pattern.name.startswith("password_reset")
]

#: The annotation app's pages and each crowd platform's (one line each), one namespace under one prefix;
#: then their REST endpoints. Publishing's pages keep the prefixes and names of the apps below it.
annotation_pages = [
    path("", include(annotation_urls)),
    path("", include("platforms.inhouse.urls")),
    path("", include("platforms.prolific.urls")),
    path("", include(publishing_urls.annotation_patterns)),
]
annotation_api = [
    path("", include(annotation_api_urls)),
    path("", include("platforms.inhouse.api_urls")),
    path("", include("platforms.prolific.api_urls")),
    path("", include(publishing_api_urls.annotation_patterns)),
]

urlpatterns = [
    path("", metrics_home.home, name="home"),
    path("home/live/", metrics_home.home_live, name="home-live"),
    path("changelog/acknowledge/", core_views.changelog_acknowledge, name="changelog-acknowledge"),
    path("admin/", admin.site.urls),
    path("accounts/api-token/", core_views.api_token_page, name="api-token"),
    path("connections/", core_views.connections_page, name="connections"),
    path("connections/<slug:kind>/test/", core_views.connection_test, name="connection-test"),
    path("connections/<slug:kind>/test/status/", core_views.connection_test_fragment, name="connection-test-status"),
    path("groups/", core_views.research_groups, name="research-groups"),
    path("accounts/", include(account_urls)),
    path("jobs/", include("core.urls")),
    path("pooling/", include("pooling.urls")),
    path("annotation/", include((annotation_pages, "annotation"))),
    path("metrics/", include((metrics_urls.urlpatterns + publishing_urls.metrics_patterns, "metrics"))),
    path("api/", include("core.api_urls")),
    path("api/pooling/", include("pooling.api_urls")),
    path("api/annotation/", include(annotation_api)),
    path("api/metrics/", include(metrics_api_urls.urlpatterns + publishing_api_urls.metrics_patterns)),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # Swagger UI and ReDoc load their scripts from drf-spectacular-sidecar's static files.
    path(
        "api/docs/",
        # GET only: OPTIONS would render the page's template with the metadata instead (a 500).
        SpectacularSwaggerView.as_view(
            url_name="schema", template_name="core/swagger_ui.html", http_method_names=["get", "head"]
        ),
        name="api-docs",
    ),
    path("api/redoc/", core_views.offline_redoc(), name="api-redoc"),
    path("api/redoc/redoc.standalone.js", core_views.redoc_script, name="api-redoc-script"),
    # Last: any other path under /api/ answers a JSON 404, with debug on or off (a missing
    # final slash is redirected to the endpoint, as APPEND_SLASH does for pages).
    re_path(r"^api/", core_views.api_not_found),
    path("favicon.ico", core_views.favicon),
]

#: Under /api/, refusals, unknown paths and server errors answer JSON (core.views), as the endpoints do;
#: elsewhere a page that says why (templates/403.html: with a link home).
handler403 = "core.views.forbidden"
handler404 = "core.views.not_found"
handler500 = "core.views.server_error"

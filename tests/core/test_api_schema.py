"""The OpenAPI schema is complete and valid, and its two viewers load from this site, not a CDN."""

import re

import pytest
import yaml
from django.core.management import call_command


def test_schema_validates_without_warnings(tmp_path):
    path = tmp_path / "schema.yml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(path))
    schema = yaml.safe_load(path.read_text())
    paths = schema["paths"]
    for route, method in [
        ("/api/pooling/pools/", "post"),
        ("/api/metrics/reports/", "post"),
        ("/api/annotation/batches/{name}/publish/", "post"),
        ("/api/annotation/batches/{name}/sync/", "post"),
        ("/api/annotation/batches/{name}/escalate/", "post"),
        ("/api/annotation/batches/{name}/cancel/", "post"),
        ("/api/annotation/batches/{name}/adjudicate/", "post"),
    ]:
        assert method in paths[route], route
    assert "409" in paths["/api/annotation/batches/{name}/publish/"]["post"]["responses"]
    schemes = schema["components"]["securitySchemes"]
    assert {"tokenAuth", "cookieAuth"} <= set(schemes) and "basicAuth" not in schemes


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/api/docs/", "/api/redoc/"])
def test_api_viewers_load_vendored_scripts(admin_client, url):
    page = admin_client.get(url).content.decode()
    scripts = re.findall(r'<script[^>]+src="([^"]+)"', page)
    assert scripts and all(src.startswith("/static/drf_spectacular_sidecar/") for src in scripts), scripts
    assert "cdn" not in page.lower()


@pytest.mark.django_db
def test_schema_and_viewers_are_for_researchers(client, django_user_model):
    for url in ("/api/schema/", "/api/docs/", "/api/redoc/"):
        assert client.get(url).status_code == 403
    client.force_login(django_user_model.objects.create_user("ann", password="pw-secret-123"))
    assert client.get("/api/schema/").status_code == 403

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
    local = ("/static/drf_spectacular_sidecar/", "/api/redoc/redoc.standalone.js")
    assert scripts and all(src.startswith(local) for src in scripts), scripts
    # Nothing fetched from another host (a word test, "cdn" not in the page, once failed on a random nonce).
    assert re.findall(r'(?:src|href)\s*[=:]\s*["\']((?:https?:)?//[^"\']+)', page) == []


@pytest.mark.django_db
def test_schema_and_viewers_are_for_researchers(client, django_user_model):
    """Refused to anyone else, in JSON like every refusal under /api/ (the schema's own renderer is
    YAML and Swagger UI's a page; a refusal is neither)."""
    documents = ("/api/schema/", "/api/docs/", "/api/redoc/", "/api/redoc/redoc.standalone.js")
    for who in ("nobody", "an annotator"):
        if who == "an annotator":
            client.force_login(django_user_model.objects.create_user("ann", password="pw-secret-123"))
        for url in documents:
            response = client.get(url)
            assert response.status_code == 403, (who, url)
            assert response["Content-Type"].startswith("application/json"), (who, url, response["Content-Type"])
            assert isinstance(response.json()["detail"], str), (who, url)


@pytest.mark.django_db
def test_redoc_links_no_fonts_from_the_internet(admin_client):
    page = admin_client.get("/api/redoc/").content.decode()
    assert "googleapis" not in page and "gstatic" not in page and "https://" not in page
    assert '"fontFamily": "system-ui' in page


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_redoc_renders_with_no_request_outside_this_site(page, login, django_user_model, live_server):
    django_user_model.objects.create_user("researcher", password="pw-secret-123", is_staff=True)
    login("researcher")
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto("/api/redoc/")
    page.get_by_text("Gender-bias query sets API").first.wait_for()  # ReDoc rendered the schema
    page.wait_for_load_state("networkidle")
    outside = [url for url in requested if not url.startswith((live_server.url, "data:", "blob:"))]
    assert requested and outside == []


@pytest.mark.django_db
@pytest.mark.parametrize("debug", [False, True])
def test_any_unmatched_path_under_api_answers_json_404(admin_client, client, settings, debug):
    settings.DEBUG = debug
    for http in (client, admin_client):
        for url in ("/api/nonexistent/", "/api/annotation/nope/x", "/api/"):
            response = http.get(url)
            assert response.status_code == 404 and response["Content-Type"] == "application/json", url
            assert response.json() == {"detail": "Not found."}
        assert http.post("/api/nonexistent/", {}).status_code == 404
    # A missing final slash leads to the endpoint (GET) or says so (POST), never an HTML page.
    assert admin_client.get("/api/jobs").status_code == 301
    posted = admin_client.post("/api/pooling/pools", {}, content_type="application/json")
    assert posted.status_code == 404 and "/api/pooling/pools/" in posted.json()["detail"]

"""Refusals say why and lead somewhere: a 403 page with a sentence and a link home; JSON under /api/."""

import pytest


@pytest.fixture
def annotator(client, django_user_model):
    user = django_user_model.objects.create_user("ann", password="pw-secret-123")
    client.force_login(user)
    return user


@pytest.mark.django_db
@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("url", ["/annotation/batches/new/", "/pooling/import/", "/metrics/crbo/", "/jobs/1/"])
def test_an_annotator_on_a_researcher_page_gets_a_page_with_a_way_back(client, annotator, settings, url, debug):
    settings.DEBUG = debug
    response = client.get(url)
    page = response.content.decode()
    assert response.status_code == 403 and response["Content-Type"].startswith("text/html")
    assert "This page is for researchers." in page
    assert 'href="/">Back to the home page</a>' in page and 'href="/annotation/next/">Next task</a>' in page
    assert '<link rel="stylesheet"' in page  # the site's own page, not a bare "403 Forbidden"


@pytest.mark.django_db
def test_refusals_under_api_are_json(client, annotator):
    for url in ("/api/redoc/redoc.standalone.js", "/api/annotation/batches/", "/api/jobs/"):
        response = client.get(url)
        assert response.status_code == 403 and response["Content-Type"] == "application/json", url
        assert response.json()["detail"]


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/pooling/import/", "/api/jobs/"])
def test_a_refusal_is_logged_as_one_line_without_a_traceback(client, annotator, caplog, url):
    import logging

    with caplog.at_level(logging.WARNING, logger="django.request"):
        assert client.get(url).status_code == 403
    records = [r for r in caplog.records if r.name == "django.request"]
    if url.startswith("/api/"):  # DRF answers its own refusals: nothing logged as an error at all
        assert all(r.exc_info is None for r in records)
        return
    assert [r.getMessage() for r in records] == [f"Forbidden (Permission denied): {url}"]
    assert records[0].exc_info is None
    assert caplog.text.count("\n") == 1 and "Traceback" not in caplog.text

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


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/metrics/new/", "/annotation/batches/any-name/publish/"])
def test_a_page_opened_with_the_wrong_method_says_what_it_takes(client, django_user_model, url):
    """Issue 45: ``/metrics/new/`` answered a GET with an empty 405."""
    researcher = django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True)
    client.force_login(researcher)
    response = client.get(url)
    page = response.content.decode()
    assert response.status_code == 405 and response["Allow"] == "POST"
    assert "does not answer a GET request: it takes POST" in page
    assert 'href="/">Back to the home page</a>' in page and '<link rel="stylesheet"' in page


@pytest.mark.django_db
def test_an_api_405_stays_json(client, django_user_model):
    researcher = django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True)
    client.force_login(researcher)
    response = client.delete("/api/jobs/")
    assert response.status_code == 405 and response["Content-Type"] == "application/json"

"""The API documentation pages lead back to the site and ask for no icon that is not there."""

import re

import pytest


@pytest.fixture
def researcher(client, django_user_model):
    user = django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True)
    client.force_login(user)
    return user


@pytest.mark.django_db
@pytest.mark.parametrize(("url", "other"), [("/api/docs/", "/api/redoc/"), ("/api/redoc/", "/api/docs/")])
def test_api_docs_link_back_to_the_site_and_to_the_other_viewer(client, researcher, url, other):
    page = client.get(url).content.decode()
    nav = re.search(r'<nav id="api-docs-nav".*?</nav>', page, re.S).group(0)
    assert '<a href="/">&larr; Back to the site</a>' in nav and f'href="{other}"' in nav
    assert f'href="{"/accounts/api-token/"}"' in nav


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/api/docs/", "/api/redoc/"])
def test_api_docs_link_an_icon_that_answers(client, researcher, url):
    page = client.get(url).content.decode()
    icons = re.findall(r'<link rel="icon" href="([^"]*)"', page)
    assert len(icons) == 1, icons
    if not icons[0].startswith("data:"):
        assert client.get(icons[0]).status_code == 200, icons[0]


@pytest.mark.django_db
@pytest.mark.parametrize("logged_in", [False, True])
def test_the_implicit_favicon_request_is_not_a_404(client, django_user_model, logged_in):
    # A fragment opened by itself, or a JSON endpoint in a browser, links no icon: the browser asks /favicon.ico.
    if logged_in:
        client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    response = client.get("/favicon.ico")
    assert response.status_code == 204 and response.content == b""
    assert "max-age" in response["Cache-Control"]


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
@pytest.mark.parametrize(
    "url", ["/api/redoc/redoc.standalone.js", "/api/redoc/", "/api/docs/", "/api/schema/", "/favicon.ico"]
)
def test_static_and_schema_views_answer_405_to_methods_they_do_not_serve(client, researcher, url, method):
    """The ReDoc bundle answered 200 to POST, PUT, PATCH and DELETE (issue 68): GET and HEAD only."""
    client.force_login(researcher)
    answer = getattr(client, method)(url)
    assert answer.status_code == 405, (url, method, answer.status_code)
    assert "GET" in answer["Allow"]

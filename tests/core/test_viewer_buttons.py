"""A viewer sees no button that would answer 403 or 404: every form the viewer's pages show is one
the viewer may send (issue 57, "Daily use").

The viewer of a group is walked through the group's pages, from the home page along every link
to the site (breadth first, within the pages of the study): no link followed answers 403 or 404,
and every POST form found on them is sent as the browser would send it (its hidden fields and its
button), and none may answer 403 or 404.
"""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urljoin, urlparse

import pytest
from django.test import Client

from core.models import Membership, ResearchGroup
from tests.core.test_research_groups import (  # noqa: F401  (fixtures)
    _kept_first_group,
    _kept_second_group,
    first_group,
    second_group,
)

#: Pages not walked: logging out ends the walk, the API's own browsable pages and documentation.
NOT_WALKED = ("/accounts/logout", "/logout", "/api/", "/admin/", "/static/", "/media/")


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.forms: list[dict] = []
        self._form: dict | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        elif tag == "form":
            self._form = {
                "method": (attrs.get("method") or "get").lower(),
                "action": attrs.get("action") or "",
                "fields": {},
                "buttons": [],
            }
            self.forms.append(self._form)
        elif self._form is not None and tag == "input" and attrs.get("name"):
            kind = (attrs.get("type") or "text").lower()
            if kind == "submit":
                self._form["buttons"].append((attrs["name"], attrs.get("value", "")))
            elif kind == "hidden" or (kind in ("text", "number") and attrs.get("value") is not None):
                self._form["fields"][attrs["name"]] = attrs.get("value", "")
        elif self._form is not None and tag == "button" and "disabled" not in attrs:  # a disabled one cannot be pressed
            self._form["buttons"].append((attrs.get("name"), attrs.get("value", "")))
        elif self._form is not None and tag == "button":
            self._form["disabled"] = True

    def handle_endtag(self, tag):
        if tag == "form":
            self._form = None


def _walk(
    client: Client, start: str = "/", limit: int = 80
) -> tuple[set[str], list[tuple[str, dict]], list[tuple[str, str, int]]]:
    """The pages reached from ``start`` along the site's links, the POST forms on them, and the links
    (``(page, link, status)``) that answered 403 or 404."""
    seen, queue, forms, refused = set(), [(start, start)], [], []
    while queue and len(seen) < limit:
        came_from, path = queue.pop(0)
        if path in seen or path.startswith(NOT_WALKED):
            continue
        seen.add(path)
        response = client.get(path)
        if response.status_code in (403, 404):
            refused.append((came_from, path, response.status_code))
        if response.status_code != 200 or "text/html" not in response.get("Content-Type", ""):
            continue
        page = _Page()
        page.feed(response.content.decode())
        for href in page.links:
            url = urlparse(urljoin(path, href))
            if not url.netloc and url.path.startswith("/") and url.path not in seen:
                queue.append((path, url.path))
        forms += [(path, form) for form in page.forms if form["method"] == "post"]
    return seen, forms, refused


@pytest.mark.slow
@pytest.mark.django_db
def test_a_viewer_sees_no_button_that_answers_403_or_404(first_group, second_group):  # noqa: F811
    group = ResearchGroup.objects.order_by("pk").first()  # the first group, with its study
    viewer = second_group["viewer"]
    Membership.objects.create(user=viewer, group=group, role=Membership.Role.VIEWER)
    client = Client(raise_request_exception=False)
    client.force_login(viewer)
    seen, forms, links_refused = _walk(client)
    assert links_refused == []  # no link of a viewer's page leads to a 403 or a 404
    refused = []
    batch = "/annotation/batches/zq-batch/"
    for page in (batch, batch + "machine/", "/annotation/team/zq-annotator/", batch + "hits/1/preview/"):
        assert page in seen  # the walk reached the study's pages
    assert len(forms) > 20
    for page, form in forms:
        action = urljoin(page, form["action"]) if form["action"] else page
        if action.startswith(NOT_WALKED):  # logging out would end the walk
            continue
        if form.get("disabled") and not form["buttons"]:
            continue
        for button in form["buttons"] or [(None, "")]:
            data = dict(form["fields"])
            if button[0]:
                data[button[0]] = button[1]
            response = client.post(action, data)
            if response.status_code in (403, 404):
                refused.append((page, action, button[0], button[1], response.status_code))
    assert refused == []

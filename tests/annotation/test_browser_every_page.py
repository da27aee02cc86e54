"""No page of the site scrolls sideways on a phone (issue 45): every page, as a researcher and as
an annotator, at 390 × 844 in a real browser, has ``scrollWidth <= innerWidth``.

The pages come from Django's URL resolver, not from a hand list, so a new page is visited as soon
as it has a route; its path parameters are filled from a demo-like world (``test_api_fuzz.seeded``:
a published batch with answers, a machine-labelled batch with its answered calibration sample, a
pool, a report, an export, annotators). A route with a parameter this test cannot fill fails the
test, naming it, rather than being skipped. Django's admin (its own stylesheet) and the API (JSON)
are not pages of the site; responses that are not HTML (CSV, images, archives) have no layout.
"""

from __future__ import annotations

import re

import pytest
from django.urls import URLResolver, get_resolver

from tests.annotation.test_api_fuzz import seeded  # noqa: F401 (fixture)

WIDTH, HEIGHT = 390, 844
#: Routes that are not the site's pages: Django's admin and the JSON API.
NOT_PAGES = ("admin/", "api/")
#: Routes of files (``results.csv``, ``rbo.png``, ``download.<fmt>``, ``favicon.ico``): no layout.
FILE = re.compile(r"\.(\w+|<[^>]+>)$")
PARAMETER = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")


def routes() -> list[tuple[str, str]]:
    """(namespace, route) of every URL pattern outside :data:`NOT_PAGES`."""

    def walk(patterns, prefix: str, namespace: str):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern), pattern.namespace or namespace)
            else:
                yield namespace, prefix + str(pattern.pattern)

    return [
        (ns, route)
        for ns, route in walk(get_resolver().url_patterns, "", "")
        if not route.lstrip("^").startswith(NOT_PAGES)
    ]


def values(namespace: str, route: str, name: str, world: dict) -> list[str]:
    """The seeded values for the parameter ``name`` of ``route``; KeyError for one not known here."""
    if name == "name":
        if route.startswith("pooling/"):
            return ["p"]
        if route.startswith("metrics/"):
            return ["rep"]
        return ["b1", "mb", "mb-part-1"]  # a crowd batch, a machine-labelled one, its calibration sample
    if name == "pk":
        if route.startswith("annotation/assignments/"):
            return [str(world["assignment"])]
        if route.startswith("annotation/prolific/hits/"):
            return [str(world["hit"])]
        return [str(world["job"])]
    return {
        "kind": ["queries", "qrels", "run", "collection"],
        "qid": ["101"],
        "position": ["1"],
        "username": ["ann-a"],
        "uidb64": [world["uidb64"]],
        "token": [world["token"]],
        "part": ["data"],
    }[name]


def paths(world: dict) -> list[str]:
    """Every page's path with its parameters filled (each combination of the seeded values)."""
    found, unknown = [], []
    for namespace, route in routes():
        if FILE.search(route):
            continue
        if route.startswith("^"):
            unknown.append(route)  # a regex route: name its values here
            continue
        filled = [route]
        for match in PARAMETER.finditer(route):
            try:
                options = values(namespace, route, match.group("name"), world)
            except KeyError:
                unknown.append(route)
                break
            filled = [path.replace(match.group(0), value, 1) for path in filled for value in options]
        else:
            found += ["/" + path for path in filled]
    assert not unknown, f"routes with parameters this test cannot fill (add them to values()): {unknown}"
    return found


@pytest.fixture
def world(seeded, annotators):  # noqa: F811
    from django.utils.encoding import force_bytes
    from django.utils.http import urlsafe_base64_encode

    from annotation.accounts import access_token_generator
    from annotation.models import Assignment, Hit
    from core.jobs import create_job

    member = annotators[2]
    return {
        "job": create_job("import", "Import query set q").pk,
        "assignment": Assignment.objects.filter(worker__identity__user=annotators[0]).order_by("pk").first().pk,
        "hit": Hit.objects.order_by("pk").first().pk,
        "uidb64": urlsafe_base64_encode(force_bytes(member.pk)),
        "token": access_token_generator.make_token(member),
    }


def overflowing(page, paths_: list[str]) -> tuple[int, dict[str, tuple[int, str]]]:
    """How many of ``paths_`` are pages (whole HTML documents), and for each that scrolls sideways:
    path -> (how far, in px; the element reaching furthest right)."""
    from playwright.sync_api import Error

    wide, measured = {}, 0
    for path in paths_:
        try:
            response = page.goto(path)
        except Error as exc:
            if "Download is starting" in str(exc):
                continue  # a file the browser saves: no layout
            raise
        if response is None or "text/html" not in (response.headers.get("content-type") or ""):
            continue  # a file: no layout
        if not response.text().lstrip().lower().startswith("<!doctype html"):
            continue  # an htmx fragment: measured inside the page that shows it
        page.wait_for_load_state()
        measured += 1
        scroll, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        if scroll > inner:
            wide[f"{path} ({response.status})"] = (scroll - inner, page.evaluate(WIDEST))
    return measured, wide


#: The innermost element reaching furthest right outside any scroll box, to say what is too wide.
WIDEST = """() => {
  let best = null, right = window.innerWidth;
  const clipped = e => {  // inside a box that scrolls or clips: not what widens the page
    for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== 'visible') return true;
    }
    return false;
  };
  for (const e of document.body.querySelectorAll('*')) {
    const r = e.getBoundingClientRect().right;
    if (r > window.innerWidth && clipped(e)) continue;
    if (r > right || (best && r === right && best.contains(e))) { best = e; right = r; }
  }
  if (!best) return '';
  const id = best.id ? '#' + best.id : '';
  const cls = best.className && typeof best.className === 'string' ? '.' + best.className.split(' ').join('.') : '';
  const parent = best.parentElement ? best.parentElement.tagName.toLowerCase() + (best.parentElement.id ? '#' + best.parentElement.id : '') : '';
  return parent + ' > ' + best.tagName.toLowerCase() + id + cls;
}"""


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_no_page_scrolls_sideways_at_390_px(world, page, login):
    every = paths(world)
    assert len(every) > 50  # the resolver gave the site's pages, not a handful
    page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    page.set_default_timeout(90_000)  # a first calibration report is computed on the first view
    wide = {}
    for role, username in (("researcher", "researcher"), ("annotator", "ann-a")):
        page.context.clear_cookies()
        login(username)
        measured, found = overflowing(page, every)
        assert measured > 40, (role, measured)  # pages, not only refusals of files and fragments
        wide |= {f"{role} {path}": what for path, what in found.items()}
    assert not wide, f"pages that scroll sideways at {WIDTH} px (px too wide): {wide}"

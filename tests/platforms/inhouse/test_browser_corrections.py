"""The HIT page in a real browser (issue 45, item 3): instructions collapsed after the first HIT, the
first query in view at 1280x800 and usable at 390 px, one key to open them; correcting the last HIT."""

import pytest

from annotation import services
from annotation.models import Judgment
from platforms.inhouse.services.annotators import create_annotator
from tests.annotation.conftest import TRUTH, make_batch

KEYS = {"n": "1", "f": "2", "m": "3", "o": "4"}
NAMES = {"n": "Non-gendered", "f": "Female", "m": "Male", "o": "Other or multiple genders"}
WRONG = {"n": "f", "f": "m", "m": "o", "o": "n"}


def _queries(batch, position):
    hit = batch.hits.get(position=position)
    return [hq.batch_query for hq in hit.hit_queries.select_related("batch_query").order_by("position")]


def _instructions_open(page) -> bool:
    return page.evaluate("document.getElementById('instructions').open")


def _first_query_bottom(page) -> float:
    box = page.locator("fieldset.query").first.bounding_box()
    return box["y"] + box["height"]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("width", "height"), [(1280, 800), (390, 844)])
def test_instructions_open_on_the_first_hit_then_collapsed_with_one_key_to_open(query_set, page, login, width, height):
    page.set_viewport_size({"width": width, "height": height})
    batch = make_batch(query_set, queries_per_hit=3, assignments_per_query=1)
    services.publish_batch(batch)
    create_annotator("ann", password="pw-secret-123")
    login("ann")

    page.goto("/annotation/next/")
    # Their first HIT of the batch: the categories explained; on a phone a tap away, the first query in view.
    assert _instructions_open(page) == (width > 600)
    assert page.evaluate("document.documentElement.scrollWidth") <= width  # no sideways scroll
    for bq in _queries(batch, 1):
        page.keyboard.press(KEYS[TRUTH[bq.qid]])
    with page.expect_navigation():
        page.keyboard.press("Enter")

    # The second HIT: collapsed, the first query whole in view without scrolling.
    assert page.get_by_role("group", name=_queries(batch, 2)[0].text, exact=True).count() == 1
    assert not _instructions_open(page)
    assert page.evaluate("window.scrollY") == 0
    assert _first_query_bottom(page) <= height
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.keyboard.press("?")
    assert _instructions_open(page)
    assert page.get_by_text("Examples:").first.is_visible()
    page.keyboard.press("?")
    assert not _instructions_open(page)
    page.keyboard.press("i")
    assert _instructions_open(page)
    page.keyboard.press("i")
    assert not _instructions_open(page)
    # The answer keys still work with the instructions toggled.
    for bq in _queries(batch, 2):
        page.keyboard.press(KEYS[TRUTH[bq.qid]])
    assert page.locator("#answered").inner_text() == "3 of 3 answered."
    if width == 390:  # a tap on the summary opens them too
        page.locator("#instructions-heading").click()
        assert _instructions_open(page)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [1280, 390])
def test_an_annotator_corrects_the_hit_just_submitted(query_set, page, login, width):
    page.set_viewport_size({"width": width, "height": 800})
    batch = make_batch(query_set, queries_per_hit=3, assignments_per_query=1)
    services.publish_batch(batch)
    create_annotator("ann", password="pw-secret-123")
    login("ann")

    page.goto("/annotation/next/")
    first = _queries(batch, 1)
    for bq in first:  # a slip on every query
        page.keyboard.press(KEYS[WRONG[TRUTH[bq.qid]]])
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.locator(".confirmation").first.is_visible()

    with page.expect_navigation():
        page.get_by_role("link", name="Correct those answers").click()
    assert "/correct/" in page.url
    assert page.locator("#correcting").is_visible()
    for bq in first:  # the answers as submitted, ready to change
        group = page.get_by_role("group", name=bq.text, exact=True)
        assert group.get_by_role("radio", name=NAMES[WRONG[TRUTH[bq.qid]]], exact=True).is_checked()
        group.get_by_role("radio", name=NAMES[TRUTH[bq.qid]], exact=True).check()
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    with page.expect_navigation():
        page.get_by_role("button", name="Submit").click()
    assert page.get_by_text(f"Your answers to HIT 1 of {batch.name} were corrected.").count() == 1
    assert page.get_by_role("group", name=_queries(batch, 2)[0].text, exact=True).count() == 1  # on with HIT 2

    stored = dict(Judgment.objects.filter(assignment__hit__position=1).values_list("batch_query__qid", "label"))
    assert stored == {bq.qid: TRUTH[bq.qid] for bq in first}
    # From the home page too, while it is the last HIT submitted and unused.
    page.goto("/annotation/")
    assert page.locator("#correct-last").count() == 1

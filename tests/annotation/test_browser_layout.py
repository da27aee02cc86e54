"""Small layout faults, measured in a real browser at 390 px and 1280 px."""

import pytest

from annotation import services
from platforms.inhouse.services.annotators import create_annotator
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import answers_for, make_batch


@pytest.fixture
def answered(local_batch, annotators):
    for user in annotators[:2]:
        while (assignment := next_assignment(user, local_batch)) is not None:
            submit_local_assignment(assignment, answers_for(assignment))
    return local_batch


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_pseudonyms_stay_whole_and_the_progress_bar_keeps_its_distance(answered, researcher, page, login):
    login("researcher")
    page.set_viewport_size({"width": 390, "height": 900})
    page.goto("/annotation/batches/b1/agreement/")
    cells = page.locator("#worker-quality-table code, #workers code")
    assert cells.count() == 4
    for i in range(cells.count()):
        # One line box: the pseudonym is not broken across lines.
        assert cells.nth(i).evaluate("e => e.getClientRects().length") == 1
        box = cells.nth(i).bounding_box()
        assert box["height"] < 30, box

    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto("/annotation/batches/b1/")
        bar = page.locator("#batch-live .progress").bounding_box()
        above = page.locator("#batch-live .cards").first.bounding_box()
        below = page.locator("#agreement-so-far").bounding_box()
        assert bar["y"] - (above["y"] + above["height"]) >= 8, (bar, above)
        assert below["y"] - (bar["y"] + bar["height"]) >= 8, (bar, below)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_four_answers_make_an_even_grid_on_a_phone(query_set, page, login):
    services.publish_batch(make_batch(query_set, queries_per_hit=2, assignments_per_query=1))
    create_annotator("ann", password="pw-secret-123")
    login("ann")
    page.set_viewport_size({"width": 390, "height": 900})
    page.goto("/annotation/next/")
    labels = page.locator("fieldset.query").first.locator(".choices label")
    boxes = [labels.nth(i).bounding_box() for i in range(4)]
    assert len({round(b["x"]) for b in boxes}) == 2 and len({round(b["y"]) for b in boxes}) == 2  # 2 x 2
    assert len({round(b["width"]) for b in boxes}) == 1  # equal columns
    assert all(b["x"] >= 0 and b["x"] + b["width"] <= 390 for b in boxes)
    assert all(b["height"] >= 40 for b in boxes)  # easy to tap
    page.screenshot(path="/tmp/shot-hit-390.png", full_page=True)

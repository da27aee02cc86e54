"""A researcher draws an audit sample and labels it with the keyboard, in a real browser (Debian's chromium),
on a phone's width: keys 1-4 as on the HIT page, one query at a time, the progress counting."""

from __future__ import annotations

import pytest

from annotation.audit.selectors import audit_labels
from core.models import Membership
from tests.annotation.audit.conftest import member
from tests.annotation.audit.test_samples import _numpy_draw


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_researcher_draws_and_labels_with_the_keyboard(big_batch, page, login):
    member("rita", Membership.Role.RESEARCHER, big_batch.group)
    login("rita")
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(f"/annotation/batches/{big_batch.name}/")
    assert page.locator("#audit-card").inner_text() == "(none drawn)"
    page.locator("#audit-link").click()
    page.get_by_label("Size").fill("50")
    page.get_by_label("Seed").fill("7")
    with page.expect_navigation():
        page.get_by_role("button", name="Draw").click()
    assert page.locator("#audit-progress").inner_text() == "0 of 50"
    with page.expect_navigation():
        page.locator("#audit-start").click()
    for key, text in (("1", "1 of 50 labelled"), ("3", "2 of 50 labelled"), ("2", "3 of 50 labelled")):
        assert page.locator("#audit-query").is_visible()
        with page.expect_navigation():
            page.keyboard.press(key)
        assert page.locator("#audit-progress").inner_text() == text
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # fits a phone
    first = _numpy_draw(7, 3)
    assert audit_labels(big_batch) == {first[0]: "n", first[1]: "m", first[2]: "f"}
    page.goto(f"/annotation/batches/{big_batch.name}/")
    assert page.locator("#audit-card").inner_text() == "(3 of 50 labelled)"

"""Hand signals in a real browser: an annotator pastes while one query is shown and leaves the tab
while another is, then answers; each judgment stores what happened on its own query, and the
review page and the export show it."""

import json

import pytest

from annotation import services
from annotation.models import Judgment
from annotation.results.selectors.labels import query_results
from platforms.inhouse.services.annotators import create_annotator
from tests.annotation.conftest import TRUTH, make_batch

KEYS = {"n": "1", "f": "2", "m": "3", "o": "4"}


def _paste(page) -> None:
    """A paste as the browser fires it for Ctrl+V, at the focused element (bubbling to the document)."""
    page.evaluate(
        "() => (document.activeElement || document.body).dispatchEvent("
        "new ClipboardEvent('paste', {bubbles: true, cancelable: true, clipboardData: new DataTransfer()}))"
    )


def _switch_tab_and_back(page) -> None:
    """The worker switches to another tab and back. Headless Chromium tells every page it has the focus
    unless told not to (then a tab switch blurs the window)."""
    page.context.new_cdp_session(page).send("Emulation.setFocusEmulationEnabled", {"enabled": False})
    page.evaluate(
        "() => { window.seen = []; window.addEventListener('blur', () => seen.push('blur')); "
        "window.addEventListener('focus', () => seen.push('focus')); }"
    )
    other = page.context.new_page()
    other.bring_to_front()
    page.wait_for_function("seen.includes('blur')")
    page.bring_to_front()
    page.wait_for_function("seen.includes('focus')")
    other.close()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_pasting_and_leaving_the_tab_are_stored_with_the_answer(query_set, page, login):
    batch = make_batch(query_set, queries_per_hit=3, assignments_per_query=1)
    services.publish_batch(batch)
    create_annotator("hands", password="pw-secret-123")
    login("hands")
    page.goto("/annotation/next/")
    hit = batch.hits.get(position=1)
    queries = [hq.batch_query for hq in hit.hit_queries.select_related("batch_query").order_by("position")]

    _paste(page)  # while the first query is shown
    page.keyboard.press(KEYS[TRUTH[queries[0].qid]])
    _switch_tab_and_back(page)  # while the second query is shown
    page.keyboard.press(KEYS[TRUTH[queries[1].qid]])
    page.keyboard.press(KEYS[TRUTH[queries[2].qid]])
    with page.expect_navigation():
        page.keyboard.press("Enter")

    stored = {
        qid: (pastes, leaves, ms)
        for qid, pastes, leaves, ms in Judgment.objects.values_list(
            "batch_query__qid", "pastes", "tab_leaves", "item_ms"
        )
    }
    assert {qid: (p, t) for qid, (p, t, _) in stored.items()} == {
        queries[0].qid: (1, 0),
        queries[1].qid: (0, 1),
        queries[2].qid: (0, 0),
    }
    assert all(ms is not None and ms >= 0 for _, _, ms in stored.values())
    # The raw answer keeps what was posted; a vote carries its signals into the results (review, export).
    raw = json.loads(Judgment.objects.first().assignment.raw_answer)
    assert raw["pastes-1"] == "1"
    votes = {r["qid"]: r["votes"] for r in query_results(batch)}
    assert votes[queries[1].qid][0]["tab_leaves"] == 1 and votes[queries[0].qid][0]["pastes"] == 1

"""Batch pages tell the true state in a real browser (Debian's Chromium) at 1280 px and 390 px:
a machine-labelled batch shows its labels by source and its crowd batches' money, offers no
Publish, and adds no estimate of its own on the batch list or the dashboard; the agreement
page's bars carry a legend and its set-aside table sorts all its rows on the server."""

import re

import pytest
from playwright.sync_api import expect

from annotation.results.selectors import state as selectors
from tests.annotation.machine.test_prelabelling_pages import calibrated, machine_batch, sampled  # noqa: F401 (fixtures)
from tests.annotation.machine.test_site_machine_state import expected_counts, routed  # noqa: F401 (fixture)

WIDTHS = (1280, 390)


def _fits(page, width: int) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width, (page.url, width)


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_machine_labelled_batch_at_both_widths(routed, researcher, page, login):  # noqa: F811
    login("researcher")
    counts = expected_counts(routed)
    spent = selectors.batch_state(routed)["spent"]
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"/annotation/batches/{routed.name}/")
        assert page.locator("#batch-status").inner_text() == "machine-labelled"
        for selector, value in (
            ("#machine-accepted", counts["accepted"]),
            ("#crowd-labelled", counts["crowd"]),
            ("#unlabelled", counts["unlabelled"]),
        ):
            assert page.locator(selector).is_visible() and page.locator(selector).inner_text() == str(value)
        assert page.locator("#spent").inner_text() == f"${spent}" and page.locator("#committed").is_visible()
        assert page.locator("#machine-cost").is_visible() and page.locator("#machine-actions").is_visible()
        assert page.get_by_role("button", name=re.compile(r"^Publish \d+ HITs$")).count() == 0  # no HIT publishing
        assert page.get_by_text("estimated cost").count() == 0 and page.locator("#hits").count() == 0
        _fits(page, width)

        page.goto("/annotation/")
        cell = page.locator(f"#answered-{routed.name}")
        assert cell.is_visible()
        assert f"{counts['accepted']} machine · {counts['crowd']} crowd" in cell.inner_text()
        row = page.locator("#batches tr", has=cell)
        assert routed.cost["total"] not in row.inner_text()
        _fits(page, width)

        page.goto("/")
        row = page.locator("#dashboard-batches tr", has=page.get_by_role("link", name=routed.name, exact=True))
        assert "Machine-labelled" in row.inner_text() and routed.cost["total"] not in row.inner_text()
        _fits(page, width)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_the_agreement_page_bars_legend_and_server_side_sort(
    local_batch, annotators, researcher, page, login, settings
):
    from annotation.results.selectors.agreement import agreement
    from platforms.inhouse.services.handout import next_assignment
    from platforms.inhouse.services.hit_page import submit_local_assignment
    from tests.annotation.conftest import answers_for

    settings.AGREEMENT_BOOTSTRAP_RESAMPLES = 0
    for index, user in enumerate(annotators[:2]):
        while (assignment := next_assignment(user, local_batch)) is not None:
            override = {"101": "f", "105": "m", "103": "n"} if index == 1 else None
            submit_local_assignment(assignment, answers_for(assignment, override=override))
    report = agreement(local_batch, bootstrap=0)
    login("researcher")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"/annotation/batches/{local_batch.name}/agreement/")
        assert page.locator("#category-alpha-legend").is_visible()
        # Each bar is as wide, relative to its column, as the value beside it (0..1).
        rows = page.locator("#category-alpha tbody tr")
        for i, code in enumerate(report["per_category_alpha"]):
            for kind, value in (
                ("alpha", report["per_category_alpha"][code]),
                ("ac1", report["per_category_ac1"][code]),
            ):
                bar = rows.nth(i).locator(f".{kind}-bar")
                column = bar.evaluate(  # the cell's content box: its width less its padding
                    "e => { const c = e.parentElement, s = getComputedStyle(c);"
                    " return c.getBoundingClientRect().width - parseFloat(s.paddingLeft) - parseFloat(s.paddingRight); }"
                )
                share = bar.evaluate("e => e.getBoundingClientRect().width") / column
                assert abs(share - min(1.0, max(0.0, value or 0.0))) < 0.03, (code, kind, share, value)
        # Sorting by qid, descending, orders every set-aside row (101, 103, 105), not one page's.
        # Each click is a navigation: wait for it, then let the assertion wait for the new table.
        page.get_by_role("link", name="qid", exact=True).click()
        page.wait_for_url(re.compile(r"[?&]sort=qid\b"))
        page.get_by_role("link", name="qid", exact=True).click()
        page.wait_for_url(re.compile(r"[?&]sort=-qid\b"))
        expect(page.locator("#set-aside tbody tr td:first-child")).to_have_text(["105", "103", "101"])
        _fits(page, width)

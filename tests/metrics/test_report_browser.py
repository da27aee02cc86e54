"""A report people read, in a real browser at 1280 and 390 px, light and dark: CIs as text, the
results table within the viewport, one plot per metric, the fairness–effectiveness plot."""

import os
import re
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.browser_jobs import ACTION_MS, wait_for_image


@pytest.fixture
def report(world, db):
    path = world / "qrels.txt"
    path.write_text("1 0 d1 2\n1 0 d3 0\n2 0 d4 1\n3 0 d2 1\n")
    call_command("import_qrels", str(path), name="judged", queries="q", collection="tiny", verbosity=0)
    call_command(
        "bias_report",
        queries="q",
        runs="a,b,c",
        cutoffs="5,10,20,30",
        qrels="judged",
        measures="MRR@10,nDCG@10",
        baseline="a",
        bootstrap=50,
        name="readable",
        verbosity=0,
    )


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("width", "scheme"), [(1280, "light"), (390, "light"), (390, "dark")])
@pytest.mark.slow
def test_report_page_reads_at_desktop_and_phone_width(
    report, browser, live_server, django_user_model, tmp_path, width, scheme
):
    django_user_model.objects.create_user("researcher", password="pw-secret-123", is_staff=True)
    context = browser.new_context(
        base_url=live_server.url, viewport={"width": width, "height": 900}, color_scheme=scheme
    )
    page = context.new_page()
    page.set_default_timeout(ACTION_MS)
    try:
        page.goto("/accounts/login/")
        page.get_by_label("Username").fill("researcher")
        page.get_by_label("Password").fill("pw-secret-123")
        page.get_by_role("button", name="Log in").click()
        page.wait_for_load_state()
        page.goto("/metrics/readable/")

        ci = page.locator("#results td .ci").first
        assert ci.is_visible()
        assert re.fullmatch(r"\[-?\d\.\d{4}, -?\d\.\d{4}\]", ci.inner_text())
        # No horizontal overflow of the page; the results table fits the viewport.
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        box = page.locator("#results").bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width
        assert page.evaluate("(t => t.scrollWidth <= t.clientWidth)", page.locator("#results").element_handle())

        plots = page.locator("#metric-plots img")
        assert plots.count() == 15  # RaB, ARaB × tf, bool; NFaiRR; TExFAIR × 2; AWRF, rKL, rND, rRD; EE, GFR; RR; nDCG
        for i in range(plots.count()):
            image = plots.nth(i)
            image.scroll_into_view_if_needed()
            wait_for_image(page, image)
            assert image.bounding_box()["width"] <= width
        tradeoff = page.locator("#tradeoff-plot")
        tradeoff.scroll_into_view_if_needed()
        wait_for_image(page, tradeoff)

        shots = Path(os.environ.get("SCREENSHOT_DIR") or tmp_path)
        shots.mkdir(parents=True, exist_ok=True)
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(shots / f"report-{width}-{scheme}.png"), full_page=True)
        page.wait_for_load_state("networkidle")  # lazy images asked for by the screenshot

        # Without a mouse: the metric filter by keyboard, then the numbers are text in the table.
        page.locator("#id_metric").focus()
        page.keyboard.press("End")  # the last metric: nDCG
        page.locator("#metric-filter button").press("Enter")
        page.wait_for_url(re.compile(r"metric=nDCG"))
        page.wait_for_load_state("networkidle")
        groups = page.locator("#results tr.group")
        assert groups.count() == 1 and "nDCG" in groups.first.inner_text()
        assert page.locator("#results tbody tr").count() == 4  # the group's row and three runs
        assert page.evaluate("document.documentElement.scrollWidth") <= width

        page.goto("/metrics/readable/?layout=ecir2024")
        assert "ECIR 2024" in page.locator("#paper-table-title").inner_text()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        page.locator("#paper-table").screenshot(path=str(shots / f"table-{width}-{scheme}.png"))
        page.wait_for_load_state("networkidle")
    finally:
        context.close()

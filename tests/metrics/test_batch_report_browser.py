"""A report on a batch's labels in a real browser at 1280 and 390 px: both intervals as text, the
labels' share, one interval plot per metric, and the way from a difference to the queries that move
it and on to the review queue."""

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from metrics import services
from pooling.models import Run
from tests.browser_jobs import ACTION_MS, wait_for_image


@pytest.fixture
def labelled_report(batch, db):
    runs = [Run.objects.get(name=n) for n in ("a", "b", "c")]
    settings = services.ReportSettings(cutoffs=(1, 2), bootstrap_samples=100)
    return services.build_batch_report("on-labels", batch, runs, settings, baseline=runs[0], bar=False)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.slow
def test_labels_section_and_contributions_read_at_desktop_and_phone_width(
    labelled_report, browser, live_server, django_user_model, tmp_path, width
):
    django_user_model.objects.create_user("researcher", password="pw-secret-123", is_staff=True)
    context = browser.new_context(base_url=live_server.url, viewport={"width": width, "height": 900})
    page = context.new_page()
    page.set_default_timeout(ACTION_MS)
    try:
        page.goto("/accounts/login/")
        page.get_by_label("Username").fill("researcher")
        page.get_by_label("Password").fill("pw-secret-123")
        page.get_by_role("button", name="Log in").click()
        page.wait_for_load_state()
        page.goto("/metrics/on-labels/?lcutoff=2")

        table = page.locator("#labels-table")
        table.scroll_into_view_if_needed()
        assert table.is_visible()
        interval = table.locator("td .ci").first
        assert re.fullmatch(r"\[-?\d\.\d{4}, -?\d\.\d{4}\]", interval.inner_text())
        assert page.evaluate("document.documentElement.scrollWidth") <= width  # the page never scrolls sideways
        box = page.locator("#labels-table").locator("xpath=..").bounding_box()  # its scroll container
        assert box["x"] >= 0 and box["x"] + box["width"] <= width

        plots = page.locator("#label-plots img")
        assert plots.count() >= 6
        for i in range(plots.count()):
            image = plots.nth(i)
            image.scroll_into_view_if_needed()
            wait_for_image(page, image)
            assert image.bounding_box()["width"] <= width

        shots = Path(os.environ.get("SCREENSHOT_DIR") or tmp_path)
        shots.mkdir(parents=True, exist_ok=True)
        table.scroll_into_view_if_needed()
        page.screenshot(path=str(shots / f"report-labels-{width}.png"))

        page.get_by_role("link", name="what moves it").first.click()
        expect(page.locator("h1")).to_have_text(re.compile(r"^What moves"))
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        first = page.locator("#contributions tbody th a").first
        qid = first.inner_text()
        first.click()
        page.wait_for_url(lambda url: "/review/" in url and f"qid={qid}" in url)
    finally:
        context.close()

"""Machine pre-labelling pages in a real browser (Debian's Chromium) at 1280 px and 390 px, light and dark:
the calibration report draws its inline SVG figures in the page's colour, and no page scrolls sideways."""

import os
import tempfile
from pathlib import Path

import pytest

from tests.annotation.machine.test_prelabelling_pages import calibrated, machine_batch, sampled  # noqa: F401 (fixtures)
from tests.browser_jobs import JOB_DEADLINE_MS

SHOTS = Path(tempfile.gettempdir()) / "genderbias-screenshots" / "prelabelling"
#: The two the README shows, refreshed on request like the others (tests/test_researcher_path.py).
README_SHOTS = {"calibration-1280-light": "7-calibration.png", "routing-390": "7b-routing-phone.png"}
DOCS = Path(__file__).resolve().parents[3] / "docs" / "screenshots"


def _shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    if os.environ.get("UPDATE_SCREENSHOTS") == "1" and name in README_SHOTS:
        page.screenshot(path=str(DOCS / README_SHOTS[name]), full_page=True)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_the_report_renders_its_svg_and_fits_a_phone(calibrated, researcher, page, login):  # noqa: F811
    login("researcher")
    colours = {}
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for width in (1280, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto("/annotation/batches/mb/calibration/")
            figures = page.locator("figure.machine-plot svg")
            figures.first.wait_for(timeout=JOB_DEADLINE_MS)  # the report's job: its state, not a clock
            assert figures.count() == 2
            for i in range(2):
                box = figures.nth(i).bounding_box()
                assert box["width"] > 200 and box["height"] > 150, box
                assert box["x"] >= 0 and box["x"] + box["width"] <= width, box
            assert page.locator("#kappa-ci").is_visible() and page.locator("#winning-rate").is_visible()
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            _shot(page, f"calibration-{width}-{scheme}")
        colours[scheme] = figures.first.evaluate("e => getComputedStyle(e).color")
    assert colours["light"] != colours["dark"], colours  # the figures follow dark mode

    page.emulate_media(color_scheme="light")
    for path, name in (
        ("/annotation/batches/mb/machine/", "machine"),
        ("/annotation/batches/mb/routing/?target_accuracy=0.95", "routing"),
    ):
        for width in (1280, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(path)
            assert page.evaluate("document.documentElement.scrollWidth") <= width, (path, width)
            _shot(page, f"{name}-{width}")
    assert page.locator("#plan-to-humans").is_visible()

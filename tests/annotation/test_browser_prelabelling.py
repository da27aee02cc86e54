"""Machine pre-labelling pages in a real browser (Debian's Chromium) at 1280 px and 390 px, light and dark:
the calibration report draws its inline SVG figures in the page's colour, and no page scrolls sideways."""

import pytest

from .test_prelabelling_pages import calibrated, machine_batch, sampled  # noqa: F401 (fixtures)

SHOTS = "/tmp/shots-prelabelling"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_report_renders_its_svg_and_fits_a_phone(calibrated, researcher, page, login):  # noqa: F811
    login("researcher")
    colours = {}
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for width in (1280, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto("/annotation/batches/mb/calibration/")
            figures = page.locator("figure.machine-plot svg")
            assert figures.count() == 2
            for i in range(2):
                box = figures.nth(i).bounding_box()
                assert box["width"] > 200 and box["height"] > 150, box
                assert box["x"] >= 0 and box["x"] + box["width"] <= width, box
            assert page.locator("#kappa-ci").is_visible() and page.locator("#winning-rate").is_visible()
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            page.screenshot(path=f"{SHOTS}/calibration-{width}-{scheme}.png", full_page=True)
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
            page.screenshot(path=f"{SHOTS}/{name}-{width}.png", full_page=True)
    assert page.locator("#plan-to-humans").is_visible()

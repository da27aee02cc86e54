"""The lightened SVGs draw, pixel for pixel, what matplotlib's own SVGs draw, in Chromium, light and dark."""

import base64

import pytest

from metrics import plots

from .test_svg_markup import FIGURES

#: Both images drawn on canvases of the same size; the count of channels that differ.
DIFFERENT_CHANNELS = """async ([a, b]) => {
  const load = src => new Promise((ok, fail) => { const i = new Image(); i.onload = () => ok(i); i.onerror = fail; i.src = src; });
  const pixels = async src => {
    const image = await load(src);
    const canvas = document.createElement('canvas');
    canvas.width = 2 * image.naturalWidth; canvas.height = 2 * image.naturalHeight;
    const context = canvas.getContext('2d');
    context.drawImage(image, 0, 0, canvas.width, canvas.height);
    return [canvas.width, canvas.height, context.getImageData(0, 0, canvas.width, canvas.height).data];
  };
  const [[w1, h1, p1], [w2, h2, p2]] = [await pixels(a), await pixels(b)];
  let different = 0, inked = 0;
  for (let i = 0; i < p1.length; i++) { if (p1[i] !== p2[i]) different++; if (i % 4 === 3 && p1[i] > 0) inked++; }
  return {sizes: [w1, h1, w2, h2], different, inked};
}"""


@pytest.mark.browser
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("which", FIGURES)
def test_lightened_svg_draws_the_same_pixels(browser, monkeypatch, which, scheme):
    light = FIGURES[which]()
    monkeypatch.setattr(plots, "lighten", lambda data: data)
    heavy = FIGURES[which]()
    assert light != heavy
    urls = [f"data:image/svg+xml;base64,{base64.b64encode(data).decode()}" for data in (heavy, light)]
    context = browser.new_context(color_scheme=scheme)
    try:
        page = context.new_page()
        page.set_content("<!doctype html><title>svg</title>")
        result = page.evaluate(DIFFERENT_CHANNELS, urls)
    finally:
        context.close()
    width, height = result["sizes"][:2]
    assert result["sizes"] == [width, height, width, height] and width > 400
    assert result["inked"] > 0.02 * width * height  # something was drawn
    assert result["different"] == 0

"""The report page shows a figure some worker already drew inline, in its own HTML, and the same
figure as an image (whose request draws it) before; the inline figure draws what the image draws."""

import base64
import io
import re

import pytest

from core.svg_plots import SVG_STYLE
from metrics import services
from metrics.svg_markup import inline
from pooling.models import QuerySet, Run

from .test_svg_markup import FIGURES


@pytest.fixture
def report(world):
    runs = [Run.objects.get(name=n) for n in ("a", "b")]
    settings = services.ReportSettings(cutoffs=(1, 2), bootstrap_samples=20)
    return services.build_report("inline", QuerySet.objects.get(name="q"), runs, settings, bar=False)


@pytest.mark.django_db
def test_a_drawn_figure_is_inline_and_one_never_drawn_is_an_image(report, client, django_user_model):
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    page = client.get(f"/metrics/{report.name}/").content.decode()
    assert '<img class="plot svg" src="/metrics/inline/metric.svg?metric=ARaB&amp;variant=tf"' in page
    assert "<svg" not in page
    drawn = client.get(f"/metrics/{report.name}/metric.svg?metric=ARaB&variant=tf").content.decode()
    png = client.get(f"/metrics/{report.name}/distribution.png?cutoff=2").content
    page = client.get(f"/metrics/{report.name}/").content.decode()
    assert 'src="/metrics/inline/metric.svg?metric=ARaB&amp;variant=tf"' not in page  # no image of it
    assert page.count("<svg ") == 1 and 'role="img" aria-label="ARaB [tf] of every run' in page
    assert '<a href="/metrics/inline/metric.svg?metric=ARaB&amp;variant=tf">SVG</a>' in page  # the file
    assert SVG_STYLE not in page and "stroke-linejoin: round" not in page  # no <style> for the whole page
    figure = page[page.index("<svg ") : page.index("</svg>") + 6]
    ids = re.findall(r' id="([^"]+)"', figure)
    assert ids and all(i.startswith("f") and i in re.findall(r"url\(#([^)]+)\)", figure) for i in ids)
    assert figure.count("<path") == drawn.count("<path") and figure.count("<text") == drawn.count("<text")
    # The distribution, drawn, is laid out at its size before it arrives.
    from PIL import Image

    width, height = Image.open(io.BytesIO(png)).size
    assert f'width="{width}" height="{height}" decoding="async"' in page


def test_inline_markup_drops_the_prolog_and_styles_and_prefixes_every_id():
    data = FIGURES["metric"]().decode()
    markup = inline(data, "fx-", 'a "label" <b>', element_id="plot")
    assert markup.startswith('<svg class="plot svg" role="img" aria-label="a &quot;label&quot; &lt;b&gt;" id="plot" ')
    assert "<style" not in markup and "<?xml" not in markup and "<!DOCTYPE" not in markup
    assert set(re.findall(r' id="([^"]+)"', markup)) == {"plot"} | {
        "fx-" + i for i in re.findall(r' id="([^"]+)"', data)
    }


#: The figure inline and as an image, each 420 px wide, drawn to PNG by Chromium.
@pytest.mark.browser
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_inline_figure_draws_what_the_image_draws(browser, scheme):
    data = FIGURES["metric"]().decode()
    url = f"data:image/svg+xml;base64,{base64.b64encode(data.encode()).decode()}"
    css = (
        ":root{color-scheme:light dark;color:#1d232a;background:#fff}"
        "@media (prefers-color-scheme: dark){:root{color:#e3e7ec;background:#14181d}}"
        "body{margin:0} div{width:420px;padding:4px} img,svg{width:100%;height:auto;display:block}"
        "svg.plot.svg *{stroke-linejoin:round;stroke-linecap:butt}"
    )
    context = browser.new_context(color_scheme=scheme)
    try:
        page = context.new_page()
        page.set_content(
            f"<!doctype html><style>{css}</style><div id=a><img src='{url}'></div><div id=b>{inline(data, 'p-', 'x')}</div>"
        )
        page.wait_for_function("document.images[0].complete")
        shots = [page.locator(f"#{i}").screenshot() for i in ("a", "b")]
    finally:
        context.close()
    from PIL import Image, ImageChops, ImageFilter

    a, b = (Image.open(io.BytesIO(shot)).convert("RGB") for shot in shots)
    assert a.size[0] == b.size[0] and abs(a.size[1] - b.size[1]) <= 1  # heights round differently
    box = (0, 0, a.size[0], min(a.size[1], b.size[1]) - 1)
    a, b = a.crop(box), b.crop(box)
    # Inline, the figure sits at a fractional offset and its edges are smoothed onto other pixels than
    # the image's: compared after a 1.5 px blur, no pixel may differ by a quarter of the range (a
    # missing mark, a wrong colour or a moved text would).
    blurred = [image.filter(ImageFilter.GaussianBlur(1.5)) for image in (a, b)]
    difference = ImageChops.difference(*blurred).convert("L")
    assert ImageChops.difference(a, Image.new("RGB", a.size, a.getpixel((0, 0)))).getbbox() is not None  # drawn
    assert sum(difference.histogram()[64:]) == 0

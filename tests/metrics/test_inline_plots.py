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


@pytest.mark.slow
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


@pytest.mark.django_db
@pytest.mark.parametrize("damage", [b"", b"\xff\xfe not utf-8", b'<?xml version="1.0"?>\n<svg xmlns="x"><g>'])
def test_a_damaged_figure_file_is_shown_as_an_image_not_pasted_into_the_page(damage, report, client, django_user_model):
    """An empty, undecodable or cut-short file under a figure's name (a disk that filled up, a
    copy) is left to its image: the page answers and its markup stays whole."""
    from metrics.services.plot_cache import plot_key, plot_path

    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    client.get(f"/metrics/{report.name}/metric.svg?metric=ARaB&variant=tf")
    path = plot_path(report, plot_key(report, "metric", {"metric": "ARaB", "variant": "tf"}), "svg")
    path.write_bytes(damage)
    response = client.get(f"/metrics/{report.name}/")
    assert response.status_code == 200
    page = response.content.decode()
    assert '<img class="plot svg" src="/metrics/inline/metric.svg?metric=ARaB&amp;variant=tf"' in page
    assert "<svg" not in page


def test_only_tags_get_the_prefix_a_label_reads_as_written():
    svg = '<svg xmlns="http://www.w3.org/2000/svg"><defs><path id="m"/></defs><use xlink:href="#m"/><text>run id="x" url(#y) href="#z"</text></svg>'
    markup = inline(svg, "p-", "label")
    assert '<path id="p-m"/>' in markup and 'xlink:href="#p-m"' in markup
    assert '<text>run id="x" url(#y) href="#z"</text>' in markup


def test_a_label_xml_cannot_hold_is_drawn_as_outlines():
    """With text as text, a control character in a label would make the SVG unreadable XML."""
    from matplotlib.figure import Figure

    from metrics.plots import _svg

    figure = Figure()
    figure.add_subplot().set_title("run\x01name")
    data = _svg(figure)
    assert data.rstrip().endswith(b"</svg>") and b"<text" not in data  # outlines, still a whole SVG


@pytest.mark.slow
def test_other_svgs_never_take_the_reports_settings():
    """matplotlib's settings are global: the calibration report's figures (``svg_bytes`` without
    settings) keep glyph outlines however many report figures are saved at the same time."""
    import threading

    from matplotlib.figure import Figure

    from core.svg_plots import svg_bytes
    from metrics.plots import _svg

    def figure():
        made = Figure()
        made.add_subplot().set_title("a title")
        return made

    stop, texts = threading.Event(), []

    def reports():
        while not stop.is_set():
            _svg(figure())

    threads = [threading.Thread(target=reports) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        for _ in range(15):
            texts.append(svg_bytes(figure()).count(b"<text"))
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert texts == [0] * 15

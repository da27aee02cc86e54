"""The report's SVGs: text as text, fewer elements, the same drawing (metrics.svg_markup, metrics.plots)."""

import re
import threading
import xml.etree.ElementTree as ET

import matplotlib
import pandas as pd
import pytest

from core.svg_plots import svg_bytes
from metrics import plots
from metrics.svg_markup import lighten

RUNS = ["bm25", "colbert & co <v2>", "c"]  # a name to escape on the way out


def _summary() -> pd.DataFrame:
    rows = []
    for i, run in enumerate(RUNS):
        for metric, variant, value in (("ARaB", "tf", 0.1 * i - 0.05), ("R", "", 0.2 + 0.3 * i)):
            for cutoff in (10, 20, 30):
                rows.append((run, metric, variant, cutoff, value + cutoff / 1000, value - 0.02, value + 0.03))
    return pd.DataFrame(rows, columns=["run", "metric", "variant", "cutoff", "value", "ci_low", "ci_high"])


def _heavy(monkeypatch, draw) -> bytes:
    """What ``draw`` gave before :func:`lighten`: matplotlib's own SVG, with the same settings."""
    monkeypatch.setattr(plots, "lighten", lambda data: data)
    return draw()


def _tree(data: bytes) -> ET.Element:
    text = data.decode()
    return ET.fromstring(text[text.index("<svg") :])


def _local(element: ET.Element) -> str:
    return element.tag.rpartition("}")[2]


FIGURES = {
    "metric": lambda: plots.metric_figure(_summary(), "ARaB", "tf"),
    "tradeoff": lambda: plots.tradeoff_figure(_summary(), ("R", "", 10), ("ARaB", "tf", 10)),
}


@pytest.mark.parametrize("which", FIGURES)
def test_text_is_text_in_a_sans_serif_stack_and_no_glyph_outlines(which):
    data = FIGURES[which]().decode()
    texts = [t for t in _tree(data.encode()).iter() if _local(t) == "text"]
    assert "colbert & co <v2>" in [t.text for t in texts]  # a run's name, escaped and read back
    assert "ARaB [tf]" in [t.text for t in texts] or "ARaB@10 against R@10" in [t.text for t in texts]
    assert all("font-family: 'DejaVu Sans'" in t.get("style") and "sans-serif" in t.get("style") for t in texts)
    assert "DejaVuSans-" not in data  # no glyph defined as a path
    assert "<use" not in data and "<metadata" not in data


@pytest.mark.parametrize("which", FIGURES)
def test_lightened_svg_keeps_every_shape_text_and_reference(monkeypatch, which):
    light = FIGURES[which]()
    heavy = _heavy(monkeypatch, FIGURES[which])
    before, after = _tree(heavy), _tree(light)
    # Every shape drawn: each path outside <defs> and each <use> of a path becomes one path.
    in_defs = {id(e) for d in before.iter() if _local(d) == "defs" for e in d.iter()}
    drawn = [e for e in before.iter() if _local(e) in ("path", "use") and id(e) not in in_defs]
    assert len([e for e in after.iter() if _local(e) == "path"]) == len(drawn)
    assert sum(_local(e) == "use" for e in before.iter()) > 20  # what there was to rewrite
    # The same texts, in the same order, with the same attributes.
    texts = [(t.text, t.attrib) for t in before.iter() if _local(t) == "text"]
    assert texts == [(t.text, t.attrib) for t in after.iter() if _local(t) == "text"]
    # Every id left is referred to, and every reference finds its element.
    ids = {e.get("id") for e in after.iter() if e.get("id")}
    references = set(re.findall(r"url\(#([^)]+)\)", light.decode()))
    assert ids == references and ids
    # Fewer elements for the browser to build: no <use> (each a second, shadow copy), few groups.
    assert len(list(after.iter())) < 0.6 * (len(list(before.iter())) + len(drawn) - len(in_defs))
    assert len(light) < len(heavy)


def test_the_same_figure_is_the_same_bytes_and_lighten_changes_a_light_svg_no_further():
    first, second = FIGURES["metric"](), FIGURES["metric"]()
    assert first == second  # ids hashed with a fixed salt, not a random one
    assert lighten(first) == first


def test_a_use_becomes_its_path_placed_and_styled_as_svg_places_a_use():
    """Worked by hand from SVG 1.1 §5.6: a <use> is ``transform`` then translate(x, y), then the
    referenced element with its own transform; the copy inherits the use's style, its own wins."""
    svg = (
        b'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" viewBox="0 0 10 10">'
        b'<defs><path id="m1" d="M 0 0\nL 1 1" style="stroke: red; stroke-width: 2" transform="scale(2)"/></defs>'
        b'<g id="line2d_1"><g clip-path="url(#c1)">'
        b'<use xlink:href="#m1" x="3" y="4" style="fill: blue; stroke: green"/>'
        b'<use xlink:href="#m1" transform="rotate(90)" style="opacity: 0.5"/>'
        b"</g></g>"
        b'<defs><clipPath id="c1"><rect x="0" y="0" width="5" height="5"/></clipPath></defs></svg>'
    )
    root = _tree(lighten(svg))
    first, second = (e for e in root.iter() if _local(e) == "path")
    assert first.attrib == {
        "d": "M 0 0 L 1 1",
        "style": "fill: blue; stroke: red; stroke-width: 2",
        "transform": "translate(3 4) scale(2)",
    }
    assert second.attrib == {
        "d": "M 0 0 L 1 1",
        "style": "opacity: 0.5; stroke: red; stroke-width: 2",
        "transform": "rotate(90) scale(2)",
    }
    # The clipped group keeps its clip path; the bare group around it is gone, as is the marker.
    clipped = next(e for e in root if _local(e) == "g")
    assert clipped.attrib == {"clip-path": "url(#c1)"} and list(clipped) == [first, second]
    assert [e.get("id") for e in root.iter() if e.get("id")] == ["c1"]


@pytest.mark.slow
def test_svg_settings_never_stay_behind_when_threads_save_at_once():
    """rcParams are global: eight threads saving SVGs at once leave matplotlib's own defaults."""
    before = {key: matplotlib.rcParams[key] for key in plots.SVG_SETTINGS}
    errors = []

    def draw():
        try:
            for _ in range(3):
                FIGURES["metric"]()
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=draw) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert {key: matplotlib.rcParams[key] for key in plots.SVG_SETTINGS} == before
    assert matplotlib.rcParams["svg.fonttype"] == "path"  # the site's other SVGs are as before
    assert b"<text" not in svg_bytes(_one_text_figure())


def _one_text_figure():
    from matplotlib.figure import Figure

    figure = Figure(figsize=(2, 1))
    figure.add_subplot().set_title("t")
    return figure

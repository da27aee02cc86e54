"""The report's figures keep every legend, label and run name inside the image, and their text
readable at a phone's width (390 px: about 360 px of image)."""

import re

import pandas as pd
import pytest

from metrics import plots

#: Long run names near the plot's edges and the longest axis notes: what used to be clipped.
RUNS = ["bm25-baseline-with-a-long-name", "colbert-v2-fine-tuned-on-msmarco", "c"]


def _summary() -> pd.DataFrame:
    rows = []
    for i, run in enumerate(RUNS):
        for metric, variant, value in (("ARaB", "tf", 0.1 * i - 0.05), ("R", "", 0.2 + 0.3 * i)):
            for cutoff in (10, 20):
                rows.append((run, metric, variant, cutoff, value, value - 0.02, value + 0.02))
    return pd.DataFrame(rows, columns=["run", "metric", "variant", "cutoff", "value", "ci_low", "ci_high"])


@pytest.fixture
def drawn(monkeypatch):
    """Each SVG the plots make, with the matplotlib Figure it came from."""
    made = []
    original = plots.svg_bytes

    def keep(figure):
        data = original(figure)
        made.append((figure, data))
        return data

    monkeypatch.setattr(plots, "svg_bytes", keep)
    return made


def _text_extent_inches(figure):
    """Width and height (inches) of the union of every visible text of ``figure`` as drawn."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    renderer = FigureCanvasAgg(figure).get_renderer()
    figure.draw(renderer)
    boxes = [t.get_window_extent(renderer) for t in figure.findobj(Text) if t.get_visible() and t.get_text().strip()]
    union = Bbox.union(boxes)
    return union.width / figure.dpi, union.height / figure.dpi, figure


def _svg_size_inches(data: bytes) -> tuple[float, float]:
    head = data[:2000].decode()
    width = float(re.search(r'width="([\d.]+)pt"', head).group(1))
    height = float(re.search(r'height="([\d.]+)pt"', head).group(1))
    return width / 72, height / 72


@pytest.mark.parametrize("which", ["metric", "tradeoff"])
def test_nothing_is_clipped_and_text_is_readable_at_390_px(drawn, which):
    summary = _summary()
    if which == "metric":
        plots.metric_figure(summary, "ARaB", "tf")
    else:
        plots.tradeoff_figure(summary, ("R", "", 10), ("ARaB", "tf", 10))
    (figure, data), *_ = drawn
    width, height = _svg_size_inches(data)
    text_width, text_height, _ = _text_extent_inches(figure)
    # Every legend entry, axis label, tick and run name lies within the saved image.
    assert text_width <= width + 0.01 and text_height <= height + 0.01
    # Shown 360 px wide, the smallest text is still at least 11 px.
    from matplotlib.text import Text

    smallest = min(t.get_fontsize() for t in figure.findobj(Text) if t.get_visible() and t.get_text().strip())
    assert smallest * 360 / (width * 72) >= 11


def test_long_axis_labels_are_wrapped_not_run_past_the_figure():
    assert plots.wrap_label("R@10 [] (1: every relevant document retrieved)", 30).count("\n") == 1
    assert all(len(line) <= 30 for line in plots.wrap_label("ARaB@10 [tf] (positive: towards male)", 30).split("\n"))

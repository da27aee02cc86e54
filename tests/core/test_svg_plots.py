"""core.svg_plots: an SVG that follows the page's colour, transparent and undated,
and no matplotlib loaded until a figure is saved."""

import subprocess
import sys

from core.svg_plots import INK, PALETTE, SVG_STYLE, ink, svg_bytes


def _figure():
    from matplotlib.figure import Figure

    figure = Figure(figsize=(3.0, 2.0), layout="constrained")
    axes = figure.add_subplot()
    axes.plot([0, 1, 2], [1, 0, 2], color=PALETTE[0], label="a run")
    axes.set_title("a title")
    axes.set_xlabel("cutoff")
    ink(axes)
    return figure


def test_ink_becomes_current_color_and_the_style_sits_inside_the_svg_element():
    text = svg_bytes(_figure()).decode("utf-8")
    assert INK not in text and INK.lstrip("#") not in text
    assert "currentColor" in text
    start = text.index("<svg")
    assert text.index(SVG_STYLE) == text.index(">", start) + 1  # right after the opening tag
    assert text.count(SVG_STYLE) == 1
    assert PALETTE[0] in text  # series colours are kept as they are


def test_the_svg_is_transparent_and_undated():
    text = svg_bytes(_figure()).decode("utf-8")
    assert "<dc:date>" not in text
    assert "fill: #ffffff" not in text  # no white background patch: the page's shows through


def test_ink_paints_axes_text_and_ticks():
    from matplotlib.colors import to_hex

    axes = _figure().axes[0]
    assert to_hex(axes.title.get_color()) == INK
    assert to_hex(axes.xaxis.label.get_color()) == INK
    assert all(to_hex(spine.get_edgecolor()) == INK for spine in axes.spines.values())


def test_importing_the_style_loads_no_matplotlib():
    code = "import sys, core.svg_plots; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

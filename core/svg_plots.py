"""The site's SVG figure style: figures that scale and follow the page's light or dark mode.

A figure drawn with matplotlib's object API (a :class:`~matplotlib.figure.Figure`, never
``pyplot``, whose global state is not safe in a server) paints its text, axes and ticks in
:data:`INK` (:func:`ink` does it for one axes); :func:`svg_bytes` saves it as SVG with
that sentinel colour replaced by ``currentColor`` and a ``<style>`` that sets ``color`` by
``prefers-color-scheme``, so the figure follows dark mode even as an ``<img>``. Inline in a
page, drop :data:`SVG_STYLE` and the SVG takes the page's own colour. Series are coloured
from :data:`PALETTE`, readable on both backgrounds.

Shared by the report's figures (:mod:`metrics.plots`) and the calibration report's
(:mod:`annotation.calibration_plots`). Pure: no Django; matplotlib is imported by the
function that saves, so importing this module costs nothing.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: Margin kept around everything a figure draws when it is saved (inches).
PAD_INCHES = 0.06
#: Sentinel colour of text, axes and ticks, replaced by ``currentColor`` in the SVG, whose own style
#: sets ``color`` by ``prefers-color-scheme`` (the site's foreground colours), so a figure follows
#: dark mode even as an ``<img>``.
INK = "#010203"
SVG_STYLE = "<style>svg{color:#1d232a}@media (prefers-color-scheme: dark){svg{color:#e3e7ec}}</style>"
#: Series colours of medium lightness, readable on the light and the dark background.
PALETTE = ("#2f7fd1", "#e07b00", "#2a9d5c", "#c8447a", "#8c6bd6", "#9a8a1a", "#17a2b8", "#b55d3c")


#: matplotlib's settings are the process's: every SVG is saved under this lock, and a caller that
#: wants other settings holds it around them (:func:`svg_settings`), so that one thread's settings
#: (the report's text as text) are never another's.
_SAVING = threading.RLock()


@contextmanager
def svg_settings(settings: Mapping[str, Any]) -> Iterator[None]:
    """:func:`svg_bytes` inside saves with matplotlib's ``settings`` (rcParams), and no other thread
    saves an SVG meanwhile."""
    import matplotlib

    with _SAVING, matplotlib.rc_context(rc=dict(settings)):
        yield


def svg_bytes(figure: Figure) -> bytes:
    """``figure`` as SVG: transparent, undated (no ``dc:date``), cropped to
    what it draws (nothing clipped), :data:`INK` as ``currentColor``, :data:`SVG_STYLE` inside;
    with the settings of the :func:`svg_settings` around it, if any."""
    from matplotlib.backends.backend_svg import FigureCanvasSVG

    FigureCanvasSVG(figure)
    buffer = io.BytesIO()
    with _SAVING:
        figure.savefig(
            buffer, format="svg", transparent=True, metadata={"Date": None}, bbox_inches="tight", pad_inches=PAD_INCHES
        )
    text = buffer.getvalue().decode("utf-8").replace(INK, "currentColor")
    start = text.index("<svg")
    end = text.index(">", start) + 1
    return (text[:end] + SVG_STYLE + text[end:]).encode("utf-8")


def ink(axes: Axes) -> None:
    """Text, spines and ticks in the page's foreground colour (see :data:`INK`)."""
    axes.tick_params(colors=INK, labelsize=9)
    for spine in axes.spines.values():
        spine.set_edgecolor(INK)
    axes.title.set_color(INK)
    axes.xaxis.label.set_color(INK)
    axes.yaxis.label.set_color(INK)
    axes.grid(True, color=INK, alpha=0.15, linewidth=0.6)

"""The site's SVG figure style: figures that scale and follow the page's light or dark mode.

A figure drawn with matplotlib's object API (never ``pyplot``, whose global state is not safe in
a server) paints text, axes and ticks in :data:`INK` (:func:`ink`); :func:`svg_bytes` replaces that
sentinel by ``currentColor`` under a ``<style>`` following ``prefers-color-scheme``, so the figure
follows dark mode even as an ``<img>``. Series take :data:`PALETTE`. Pure: no Django; matplotlib is
imported by the function that saves.
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
#: Sentinel colour of text, axes and ticks, replaced by ``currentColor`` in the SVG (see the module).
INK = "#010203"
SVG_STYLE = "<style>svg{color:#1d232a}@media (prefers-color-scheme: dark){svg{color:#e3e7ec}}</style>"
#: Series colours of medium lightness, readable on the light and the dark background.
PALETTE = ("#2f7fd1", "#e07b00", "#2a9d5c", "#c8447a", "#8c6bd6", "#9a8a1a", "#17a2b8", "#b55d3c")


#: matplotlib's settings are the process's: every SVG is saved under this lock, held around other
#: settings too (:func:`svg_settings`), so one thread's settings are never another's.
_SAVING = threading.RLock()


@contextmanager
def svg_settings(settings: Mapping[str, Any]) -> Iterator[None]:
    """:func:`svg_bytes` inside saves with matplotlib's ``settings`` (rcParams), and no other thread
    saves an SVG meanwhile."""
    import matplotlib

    with _SAVING, matplotlib.rc_context(rc=dict(settings)):
        yield


def svg_bytes(figure: Figure) -> bytes:
    """``figure`` as SVG: transparent, undated, cropped to what it draws, :data:`INK` as ``currentColor``,
    :data:`SVG_STYLE` inside."""
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

"""The calibration report's figures: a reliability diagram and each category's share of the batch.

Drawn with matplotlib's object API (never pyplot) as inline SVG in the page's foreground colour, so they
follow dark mode. Pure: no Django; the page marks the text safe (no user text is in it).
"""

from __future__ import annotations

import textwrap
from typing import Any

from core.svg_plots import INK, PALETTE, SVG_STYLE, ink, svg_bytes
from genderbias.labels import LABEL_NAMES, LABELS


def _figure(size: tuple[float, float], title: str, xlabel: str) -> tuple[Any, Any]:
    """A figure of ``size`` inches and its axes, the x axis a share in [0, 1]."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=size, layout="constrained")
    axes = figure.add_subplot()
    axes.set_xlim(0, 1)
    axes.set_title(title, fontsize=11)
    axes.set_xlabel(xlabel, fontsize=9)
    return figure, axes


def inline_svg(figure, axes, legend) -> str:
    """The figure, its ``axes`` and ``legend`` inked, as inline SVG in ``currentColor``: the ``<style>``
    :func:`core.svg_plots.svg_bytes` adds for an ``<img>`` and the XML prolog dropped, as inline SVG
    inherits the page's colour."""
    ink(axes)
    for text in legend.get_texts():
        text.set_color(INK)
    text = svg_bytes(figure).decode("utf-8").replace(SVG_STYLE, "")
    return text[text.index("<svg") :]


def reliability_svg(reliability: list[dict[str, float]]) -> str:
    """The reliability diagram: per confidence bin, how often the machine was right, against the diagonal."""
    figure, axes = _figure((3.7, 3.2), "Reliability", "machine's confidence")
    axes.plot([0, 1], [0, 1], color=INK, linewidth=0.8, alpha=0.6, linestyle="--", label="perfectly calibrated")
    for b in reliability:
        axes.bar(
            (b["low"] + b["high"]) / 2, b["accuracy"], width=(b["high"] - b["low"]) * 0.9,
            color=PALETTE[0], alpha=0.75,
        )  # fmt: skip
    if reliability:
        axes.plot(
            [b["confidence"] for b in reliability], [b["accuracy"] for b in reliability],
            marker="o", markersize=4, color=PALETTE[1], linewidth=1.2, label="mean confidence of a bin",
        )  # fmt: skip
    axes.set_ylim(0, 1)
    axes.set_ylabel("share right (crowd's label)", fontsize=9)
    return inline_svg(figure, axes, axes.legend(loc="upper left", fontsize=8, frameon=False))


def proportions_svg(proportions: dict[str, dict[str, Any]]) -> str:
    """Each category's share of the batch: the PPI++ estimate with its CI, and the machine's share alone."""
    figure, axes = _figure((3.9, 3.0), "Share of the batch", "share of the batch's queries")
    y = list(range(len(LABELS)))[::-1]
    for row, label in zip(y, LABELS, strict=True):
        p = proportions.get(label) or {}
        if p.get("estimate") is not None:
            ci = p.get("ci") or [p["estimate"], p["estimate"]]
            axes.errorbar(
                [p["estimate"]], [row + 0.1], xerr=[[max(0.0, p["estimate"] - ci[0])], [max(0.0, ci[1] - p["estimate"])]],
                fmt="o", markersize=5, capsize=3, color=PALETTE[0], label="PPI++ estimate, 95% CI" if row == y[0] else None,
            )  # fmt: skip
        if p.get("machine_only") is not None:
            axes.plot(
                [p["machine_only"]], [row - 0.1], marker="x", linestyle="", markersize=6, color=PALETTE[1],
                label="machine alone" if row == y[0] else None,
            )  # fmt: skip
    # Full names, wrapped to stay narrow ("Other or / multiple genders"), never shortened to a code or a word.
    axes.set_yticks(y, [textwrap.fill(LABEL_NAMES[label], 14) for label in LABELS], fontsize=8)
    axes.set_ylim(-0.6, len(LABELS) - 0.4)
    return inline_svg(figure, axes, figure.legend(loc="outside lower center", ncols=2, fontsize=8, frameon=False))

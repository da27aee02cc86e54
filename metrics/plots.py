"""Figures of a report, drawn with matplotlib's object API (never ``pyplot``: its global state is not safe in a
server serving requests at once). Each function returns PNG, SVG (the site's style, :mod:`core.svg_plots`: scales and
follows dark mode) or, with ``format="pdf"``, a paper's vector PDF. Nothing is clipped: a tight bounding box and
wrapped axis labels. Sizes and legibility: docs/metrics.md, "Reports: pages, API, tasks".
"""

from __future__ import annotations

import io
import itertools

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from core.figure_notes import figure_notes
from core.svg_plots import INK, PAD_INCHES, PALETTE, ink, svg_bytes, svg_settings
from genderbias.ranking.vocabulary import is_rab_like, metric_position, note, variant_position

from .names import header_lines
from .svg_markup import lighten

#: The artists' gid of the ranges over the orders of tied documents (a figure's tie ranges, found by it).
TIE_RANGE_GID = "tie-range"
#: How a figure names them in its legend.
TIE_RANGE_LABEL = "range over orders of ties"


def png_bytes(figure: Figure) -> bytes:
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight", pad_inches=PAD_INCHES)
    return buffer.getvalue()


#: The paper PDFs' fonts as TrueType (42), not Type 3, which submission systems (ACM's TAPS, IEEE PDF eXpress) reject.
PDF_SETTINGS = {"pdf.fonttype": 42}


def _pdf(figure: Figure) -> bytes:
    """A vector PDF for a paper, its type at the paper's size, undated so the same report gives the same bytes."""
    from matplotlib.backends.backend_pdf import FigureCanvasPdf

    _paper_text(figure)
    FigureCanvasPdf(figure)
    buffer = io.BytesIO()
    # No tight crop: the paper places the figure at its natural width, so its type is the size it was drawn at.
    with svg_settings(PDF_SETTINGS):  # matplotlib's settings are global: one save at a time
        figure.savefig(buffer, format="pdf", metadata={"CreationDate": None})
    return buffer.getvalue()


#: A paper's figure width (inches): a column of ACM ``sigconf``; centred at that size on one-column pages.
PAPER_WIDTH = 3.3
#: The paper figures' type size (points), at the placed size: venues ask for 7 pt or more.
PAPER_POINTS = 8
#: The tallest a paper figure is drawn (inches), with its caption within the shortest text block of
#: :data:`publishing.latex.TEMPLATES`; more panels are drawn as several figures (:func:`paper_parts`).
PAPER_MAX_HEIGHT = 6.8
#: A panel title longer than this is set on two lines (the variant on the second), never cut at the edge.
TITLE_CHARS = 14
#: Okabe and Ito's colour-blind-safe palette (without its yellow, faint on white paper): the paper's series.
PAPER_PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000")
#: Each run's marker and line style, so runs are told apart without colour (print, colour blindness).
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 2)), (0, (3, 1)), (0, (6, 2)))


def series_style(i: int, paper: bool = False) -> dict:
    """The ``i``-th run's colour, marker and line style: the same run looks the same in every figure of a report."""
    palette = PAPER_PALETTE if paper else PALETTE
    return {
        "color": palette[i % len(palette)],
        "marker": MARKERS[i % len(MARKERS)],
        "linestyle": LINESTYLES[i % len(LINESTYLES)],
    }


def _paper_text(figure: Figure) -> None:
    """Every text of ``figure`` at :data:`PAPER_POINTS` (ticks one point less, never below 7)."""
    for axes in figure.axes:
        axes.title.set_fontsize(PAPER_POINTS)
        axes.xaxis.label.set_fontsize(PAPER_POINTS)
        axes.yaxis.label.set_fontsize(PAPER_POINTS - 1)
        axes.tick_params(labelsize=PAPER_POINTS - 1)
        for text in axes.texts:
            text.set_fontsize(PAPER_POINTS - 1)
    for legend in figure.legends:
        for text in legend.get_texts():
            text.set_fontsize(PAPER_POINTS)


#: Version of the drawing, part of every cached figure's key (:mod:`metrics.services.plot_cache`): raise it when a
#: change draws figures differently, so none drawn before is served even where the software version did not change.
DRAWING = 5
#: matplotlib settings of the report's SVGs: text stays ``<text>``, set first in DejaVu Sans, the font matplotlib
#: measures with (no web font); ids hashed with a fixed salt, so the same figure is the same bytes.
SVG_SETTINGS = {
    "svg.fonttype": "none",
    "svg.hashsalt": "genderbias-metrics-plots",
    "font.sans-serif": ["DejaVu Sans", "Bitstream Vera Sans", "Verdana", "Arial", "Helvetica"],
}


def _svg(figure: Figure) -> bytes:
    """``figure`` in the site's SVG style with :data:`SVG_SETTINGS`, in fewer elements (:func:`~metrics.svg_markup.
    lighten`); text XML cannot hold (a control character in a label) is drawn as outlines instead."""
    from xml.etree.ElementTree import ParseError

    with svg_settings(SVG_SETTINGS):
        data = svg_bytes(figure)
    try:
        return lighten(data)
    except ParseError:
        return svg_bytes(figure)


def _save(figure: Figure, format: str) -> bytes:
    """``figure`` as ``png`` (the page's raster plots), ``svg`` (the site's style) or ``pdf`` (a paper)."""
    savers = {"png": png_bytes, "svg": _svg, "pdf": _pdf}
    if format not in savers:
        raise ValueError(f"unknown figure format {format!r}; choose one of {', '.join(savers)}")
    return savers[format](figure)


def wrap_label(text: str, width: int) -> str:
    """An axis label broken into lines of at most ``width`` characters, so it never outruns its axis."""
    import textwrap

    return "\n".join(textwrap.wrap(text, width)) or text


def panels(frame: pd.DataFrame) -> list[tuple[str, str]]:
    """The (metric, variant) panels a figure of ``frame`` draws, in the figures' order."""
    pairs = dict.fromkeys(zip(frame["metric"], frame["variant"], strict=True)) if len(frame) else {}
    return sorted(pairs, key=lambda mv: (metric_position(mv[0]), variant_position(mv[1])))


def paper_parts(count: int, row_inches: float, fixed_inches: float, columns: int = 2) -> list[range]:
    """The panel indices of each part of a paper figure: as many rows of ``row_inches`` (plus ``fixed_inches`` of
    legend and margins) as keep a part within :data:`PAPER_MAX_HEIGHT` (at least one)."""
    rows = max(1, int((PAPER_MAX_HEIGHT - fixed_inches) // row_inches))
    step = rows * columns
    return [range(start, min(start + step, count)) for start in range(0, count, step)] or [range(0)]


#: On paper, a run's name is broken into lines of at most this many characters, never past the figure's edge.
NAME_CHARS = 16


def paper_name(name: object) -> str:
    """A run's name in lines of at most :data:`NAME_CHARS` (:func:`metrics.names.header_lines`)."""
    return "\n".join(header_lines(str(name), NAME_CHARS))


def _title(text: str, variant: str, paper: bool) -> str:
    """A panel's title, the variant on a line of its own when the title is long (on paper)."""
    whole = f"{text} [{variant}]"
    return f"{text}\n[{variant}]" if paper and len(whole) > TITLE_CHARS else whole


#: Height (inches) of a row of the cutoff figure's panels on paper, and of a row of its legend.
CUTOFF_ROW = 1.55
LEGEND_ROW = 0.16


def cutoff_fixed(runs: int) -> float:
    """What the paper cutoff figure needs beyond its panels' rows (inches): margins and the legend."""
    return 0.2 + LEGEND_ROW * -(-runs // 2)


def cutoff_figure(summary: pd.DataFrame, *, format: str = "png", only: list[tuple[str, str]] | None = None) -> bytes:
    """Bias of every run against the cutoff, a panel per metric and variant (cf. Figure 1 of Rekabsaz & Schedl
    2020), the 95% CI as a band; ``only`` these panels if given (a part, :func:`paper_parts`)."""
    shown = panels(summary) if only is None else list(only)
    paper = format == "pdf"
    columns = min(2 if paper else 3, max(1, len(shown)))
    rows = max(1, -(-len(shown) // columns))
    runs = list(dict.fromkeys(summary["run"])) if len(summary) else []
    if paper:  # a column wide, panels 1.5 in high, the legend's rows under them
        entries = len(runs) + int("tie_low" in summary.columns and bool(summary["tie_low"].notna().any()))
        figure = Figure(figsize=(PAPER_WIDTH, CUTOFF_ROW * rows + cutoff_fixed(entries)), layout="constrained")
    else:
        figure = Figure(figsize=(4.2 * columns, 3.2 * rows), layout="constrained")
    cutoffs = sorted(float(c) for c in set(summary["cutoff"])) if len(summary) else []
    for i, (metric, variant) in enumerate(shown):
        axes = figure.add_subplot(rows, columns, i + 1)
        data = summary[(summary["metric"] == metric) & (summary["variant"] == variant)]
        for run in runs:
            line = data[data["run"] == run].sort_values("cutoff")
            if not len(line):
                continue
            style = series_style(runs.index(run), paper)
            label = paper_name(run) if paper else run
            axes.plot(line["cutoff"], line["value"], label=label, markersize=4 if paper else 6, linewidth=1.2, **style)
            low, high = line["ci_low"].astype(float), line["ci_high"].astype(float)
            if low.notna().all() and high.notna().all():
                axes.fill_between(line["cutoff"], low, high, alpha=0.15, color=style["color"], linewidth=0)
            step = 0.15 * min(b - a for a, b in itertools.pairwise(cutoffs)) if len(cutoffs) > 1 else 0.3
            offset = step * (runs.index(run) + 1) / max(1, len(runs))
            tie_ranges(axes, line["cutoff"].astype(float) + offset, line, style["color"])
        if is_rab_like(metric):
            axes.axhline(0.0, color="0.6", linewidth=0.8)
        axes.set_title(_title(metric, variant, paper))
        axes.set_xlabel("cutoff")
        axes.set_ylabel(wrap_label(note(metric), 22 if paper else 28), fontsize="small")
        axes.set_xticks(sorted(data["cutoff"].unique()))
    if shown:
        handles, labels = figure.axes[0].get_legend_handles_labels()
        handles, labels = with_tie_ranges(figure, handles, labels)
        figure.legend(
            handles, labels, loc="outside lower center", ncols=min(len(labels), 2 if paper else 6), frameon=not paper
        )
    return _save(figure, format)


def tie_ranges(axes, x, line: pd.DataFrame, color: str) -> None:
    """Beside each figure at ``x``, its range over the orders of tied documents (dotted), and a hollow marker on 0
    where that range holds it (the ranking does not decide the sign)."""
    notes = [figure_notes(row) for row in line.to_dict("records")]
    shown = [(float(at), n) for at, n in zip(x, notes, strict=True) if n.tie_range is not None]
    if not shown:
        return
    axes.vlines(
        [at for at, _ in shown], [n.tie_low for _, n in shown], [n.tie_high for _, n in shown],
        colors=color, linestyles=(0, (1, 1)), linewidth=1.6, gid=TIE_RANGE_GID,
    )  # fmt: skip
    undecided = [at for at, n in shown if n.sign_undecided]
    if undecided:
        axes.plot(
            undecided, [0.0] * len(undecided), linestyle="none", marker="o", markersize=4, markerfacecolor="none",
            color=color, gid=f"{TIE_RANGE_GID}-holds-0",
        )  # fmt: skip


def with_tie_ranges(figure: Figure, handles: list, labels: list) -> tuple[list, list]:
    """The legend's entries with one for the tie ranges when a panel draws any."""
    from matplotlib.lines import Line2D

    drawn = any(c.get_gid() == TIE_RANGE_GID for axes in figure.axes for c in axes.collections)
    if not drawn:
        return handles, labels
    proxy = Line2D([], [], color=INK, linestyle=(0, (1, 1)), linewidth=1.6)
    return [*handles, proxy], [*labels, TIE_RANGE_LABEL]


def distribution_row(runs: int) -> float:
    """Height (inches) of a row of the paper distribution figure: a line per run, less when many runs would
    outgrow :data:`PAPER_MAX_HEIGHT`, never under 7 pt type's line."""
    return 0.7 + max(0.11, min(0.22, (PAPER_MAX_HEIGHT - 0.8) / max(1, runs))) * max(1, runs)


def distribution_figure(
    per_query: pd.DataFrame, cutoff: int, *, format: str = "png", only: list[tuple[str, str]] | None = None
) -> bytes:
    """Per-query distribution of every metric at one cutoff, a box plot per run; ``only`` as :func:`cutoff_figure`."""
    data = per_query[per_query["cutoff"] == cutoff]
    shown = panels(data) if only is None else list(only)
    paper = format == "pdf"
    columns = min(2 if paper else 3, max(1, len(shown)))
    rows = max(1, -(-len(shown) // columns))
    runs = list(pd.unique(per_query["run"])) if len(per_query) else []  # in order; not a Python pass per row
    if paper:  # a column wide; a row of each panel per run
        figure = Figure(figsize=(PAPER_WIDTH, distribution_row(len(runs)) * rows), layout="constrained")
    else:
        figure = Figure(figsize=(4.2 * columns, 3.2 * rows), layout="constrained")
    for i, (metric, variant) in enumerate(shown):
        axes = figure.add_subplot(rows, columns, i + 1)
        panel = data[(data["metric"] == metric) & (data["variant"] == variant)]
        values = [panel.loc[panel["run"] == run, "value"].dropna().to_numpy() for run in runs]
        # On paper the runs read down the side, unturned (turned names print small and crooked).
        axes.boxplot(
            values, tick_labels=[paper_name(run) for run in runs] if paper else runs, showmeans=True, flierprops={"markersize": 2},
            orientation="horizontal" if paper else "vertical",
        )  # fmt: skip
        if is_rab_like(metric):
            (axes.axvline if paper else axes.axhline)(0.0, color="0.6", linewidth=0.8)
        axes.set_title(_title(f"{metric}@{cutoff}", variant, paper))
        if paper:
            axes.invert_yaxis()  # the first run on top
            if i % columns:  # the runs in the same order as the row's first panel names them: room for the title
                axes.tick_params(axis="y", labelleft=False)
        else:
            axes.tick_params(axis="x", labelrotation=30, labelsize="small")
    return _save(figure, format)


# --- SVG figures of the report page: one per metric, and fairness against effectiveness -----------


def _legend(figure: Figure, axes, runs: int) -> None:
    """The runs' legend under the plot in as many columns (up to 3) as fit, so long names do not shrink the image."""
    if runs:
        handles, labels = with_tie_ranges(figure, *axes.get_legend_handles_labels())
        # About 5 points a character at 9 points, plus the marker: how many names fit side by side.
        fits = int(figure.get_figwidth() * 72 // (5 * (max(map(len, labels), default=1) + 5)))
        legend = figure.legend(
            handles, labels, loc="outside lower center", ncols=max(1, min(runs, 3, fits)), frameon=False, fontsize=9
        )
        for text in legend.get_texts():
            text.set_color(INK)


def metric_figure(summary: pd.DataFrame, metric: str, variant: str, *, format: str = "svg") -> bytes:
    """One metric and variant of every run against the cutoff, the 95% CI as error bars."""
    data = summary[(summary["metric"] == metric) & (summary["variant"] == variant)]
    runs = list(dict.fromkeys(data["run"]))
    cutoffs = sorted(data["cutoff"].unique())
    figure = Figure(figsize=(3.7, 3.0), layout="constrained")
    axes = figure.add_subplot()
    # Runs side by side around each cutoff, so that their error bars do not hide one another.
    spread = 0.12 * min(b - a for a, b in itertools.pairwise(cutoffs)) if len(cutoffs) > 1 else 0.5
    for i, run in enumerate(runs):
        line = data[data["run"] == run].sort_values("cutoff")
        x = line["cutoff"].astype(float) + spread * (i - (len(runs) - 1) / 2) / max(1, len(runs))
        values = line["value"].astype(float).to_numpy()
        low = (values - line["ci_low"].astype(float).to_numpy()).clip(min=0)
        high = (line["ci_high"].astype(float).to_numpy() - values).clip(min=0)
        axes.errorbar(
            x, values, yerr=[low, high], markersize=4, capsize=3, linewidth=1.4, label=run, **series_style(i),
        )  # fmt: skip
        tie_ranges(axes, x + spread / (2 * max(1, len(runs))), line, series_style(i)["color"])
    if is_rab_like(metric):
        axes.axhline(0.0, color=INK, linewidth=0.8, alpha=0.6)
    axes.set_title(f"{metric} [{variant}]", fontsize=11)
    axes.set_xlabel("cutoff", fontsize=9)
    axes.set_ylabel(wrap_label(note(metric), 28), fontsize=9)
    axes.set_xticks(cutoffs)
    if len(cutoffs) == 1:
        axes.set_xlim(cutoffs[0] - 0.5, cutoffs[0] + 0.5)
    ink(axes)
    _legend(figure, axes, len(runs))
    return _save(figure, format)


def tradeoff_figure(
    summary: pd.DataFrame, x: tuple[str, str, int], y: tuple[str, str, int], *, format: str = "svg"
) -> bytes:
    """Fairness against effectiveness: each run a point at (``x``, ``y``), each a (metric, variant, cutoff), with
    the 95% CIs as error bars both ways."""
    keyed = summary.set_index(["run", "metric", "variant", "cutoff"])
    runs = list(dict.fromkeys(summary["run"]))
    paper = format == "pdf"
    figure = Figure(figsize=(PAPER_WIDTH, 3.0) if paper else (3.7, 3.4), layout="constrained")
    axes = figure.add_subplot()
    xs = [keyed.loc[(run, *x), "value"] for run in runs if (run, *x) in keyed.index]
    middle = (min(xs) + max(xs)) / 2 if xs and not pd.isna(min(xs)) else 0.0
    for i, run in enumerate(runs):
        try:
            a, b = keyed.loc[(run, *x)], keyed.loc[(run, *y)]
        except KeyError:
            continue
        if pd.isna(a["value"]) or pd.isna(b["value"]):
            continue
        xerr = [[max(0.0, a["value"] - a["ci_low"])], [max(0.0, a["ci_high"] - a["value"])]]
        yerr = [[max(0.0, b["value"] - b["ci_low"])], [max(0.0, b["ci_high"] - b["value"])]]
        style = series_style(i, paper)
        axes.errorbar(
            [a["value"]], [b["value"]], xerr=xerr, yerr=yerr, linestyle="none", marker=style["marker"],
            markersize=5, capsize=3, color=style["color"], label=paper_name(run) if paper else run,
        )  # fmt: skip
        if paper:  # on paper the legend names the runs (by marker and colour): names by points overlap
            continue
        # A name reads away from the middle, so the rightmost run's name does not run off the figure.
        left = a["value"] > middle
        axes.annotate(
            run, (a["value"], b["value"]), xytext=(-5 if left else 5, 5), textcoords="offset points",
            ha="right" if left else "left", fontsize=9, color=INK,
        )  # fmt: skip
    if is_rab_like(y[0]):
        axes.axhline(0.0, color=INK, linewidth=0.8, alpha=0.6)
    axes.margins(0.12)
    axes.set_title(wrap_label(f"{y[0]}@{y[2]} against {x[0]}@{x[2]}", 30 if paper else 60), fontsize=11)
    axes.set_xlabel(wrap_label(f"{x[0]}@{x[2]} [{x[1]}] ({note(x[0])})", 40), fontsize=9)
    axes.set_ylabel(wrap_label(f"{y[0]}@{y[2]} [{y[1]}] ({note(y[0])})", 30), fontsize=9)
    ink(axes)
    _legend(figure, axes, len(runs))
    return _save(figure, format)


def label_interval_figure(rows: pd.DataFrame, *, interval: str | None = None, format: str = "svg") -> bytes:
    """One metric at one cutoff of a report on a batch's labels: per run, the value with its query-only interval
    (hollow) above the label-corrected value with the combined one (filled; none where it may not cover).
    ``interval``: :attr:`metrics.models.Report.interval_sentence`, in the caption."""
    runs = list(dict.fromkeys(rows["run"]))
    metric, variant, cutoff = rows["metric"].iloc[0], rows["variant"].iloc[0], int(rows["cutoff"].iloc[0])
    figure = Figure(figsize=(3.7, 0.6 + 0.55 * max(1, len(runs))), layout="constrained")
    axes = figure.add_subplot()
    keyed = rows.set_index("run")
    for i, run in enumerate(runs):
        row, color, y = keyed.loc[run], PALETTE[i % len(PALETTE)], len(runs) - 1 - i
        pairs = (
            (row["value"], row["ci_low"], row["ci_high"], y + 0.15, "none", 1.0),
            (row["corrected"], row["combined_low"], row["combined_high"], y - 0.15, color, 2.4),
        )  # fmt: skip
        for value, low, high, at, face, width in pairs:
            if value is None or pd.isna(value):
                continue
            error = [[max(0.0, value - low)], [max(0.0, high - value)]] if not pd.isna(low) else None
            axes.errorbar(
                [value], [at], xerr=error, fmt="o", markersize=5, capsize=3, linewidth=width, color=color,
                markerfacecolor=face,
            )  # fmt: skip
    if is_rab_like(metric):
        axes.axvline(0.0, color=INK, linewidth=0.8, alpha=0.6)
    axes.set_yticks(range(len(runs)), list(reversed(runs)), fontsize=9)
    axes.set_ylim(-0.6, len(runs) - 0.4)
    axes.set_title(f"{metric}@{cutoff} [{variant}]", fontsize=11)
    filled = f"filled: {interval}" if interval else "filled: with labels"
    axes.set_xlabel(wrap_label(f"{note(metric)}; hollow: queries only, {filled}", 44), fontsize=9)
    ink(axes)
    return _save(figure, format)

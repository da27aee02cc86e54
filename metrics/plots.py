"""Figures of a report, drawn with matplotlib's object API on the Agg canvas.

Never ``pyplot``: its global state is not safe in a server process serving several
requests at once. Each function builds its own :class:`~matplotlib.figure.Figure` and
returns PNG bytes, or SVG bytes for the report page's per-metric and fairness–effectiveness plots
(:func:`metric_figure`, :func:`tradeoff_figure`), which scale and follow dark mode
(the site's SVG style, :mod:`core.svg_plots`). The report's figures also take ``format="pdf"``:
the same drawing as a vector PDF for a paper (:mod:`publishing.services.paper`).

Nothing is clipped: figures are saved with a tight bounding box (every legend, label and
run name inside), and long axis labels are wrapped rather than run past the figure's edge.
The SVGs are drawn about 3.7 inches wide with 9-point axis text, so at a 390 px phone width
(about 360 px of image) the text stays above 11 px. Their text is SVG ``<text>`` in the browser's
own sans-serif (:data:`SVG_SETTINGS`), not glyph outlines, and their markup is rewritten into fewer
elements (:mod:`metrics.svg_markup`): the same drawing in less of the browser's time.
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


#: matplotlib settings of the paper's PDFs: fonts embedded as TrueType (42), not as Type 3 (matplotlib's
#: default), which submission systems (ACM's TAPS, IEEE PDF eXpress) flag or reject.
PDF_SETTINGS = {"pdf.fonttype": 42}


def _pdf(figure: Figure) -> bytes:
    """A vector PDF for a paper (the paper bundle, :mod:`publishing.services.paper`): undated, so the
    same report gives the same bytes; :data:`~core.svg_plots.INK` is near-black on paper; its fonts
    TrueType (:data:`PDF_SETTINGS`)."""
    from matplotlib.backends.backend_pdf import FigureCanvasPdf

    FigureCanvasPdf(figure)
    buffer = io.BytesIO()
    # The page is the figure's own size (no tight crop): the paper places it at its natural width,
    # :data:`PAPER_WIDTH`, so its type is the size it was drawn at (constrained layout keeps it inside).
    with svg_settings(PDF_SETTINGS):  # matplotlib's settings are global: one save at a time
        figure.savefig(buffer, format="pdf", metadata={"CreationDate": None})
    return buffer.getvalue()


#: A paper's figure width (inches): a two-column ACM ``sigconf`` column is 3.33 in (241 pt); on a
#: one-column page (Springer LNCS, 4.8 in) the figure sits centred at the same natural size.
PAPER_WIDTH = 3.3
#: The paper figures' type size (points), at the placed size: venues ask for 7 pt or more.
PAPER_POINTS = 8
#: The tallest a paper figure is drawn (inches): its caption below it still within the shortest text
#: block of :data:`publishing.latex.TEMPLATES` (LNCS, 549 pt = 7.6 in; 6.8 in is 490 pt). A figure with more panels than fit
#: is drawn as several (:func:`paper_parts`), each a figure of its own.
PAPER_MAX_HEIGHT = 6.8
#: A panel title longer than this many characters is set on two lines (the variant on the second), so
#: it is never cut at the figure's edge.
TITLE_CHARS = 14
#: Okabe and Ito's colour-blind-safe palette (without its yellow, faint on white paper): the paper's series.
PAPER_PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000")
#: Each run's marker and line style, so runs are told apart without colour (print, colour blindness).
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 2)), (0, (3, 1)), (0, (6, 2)))


def series_style(i: int, paper: bool = False) -> dict:
    """The ``i``-th run's colour, marker and line style (the site's :data:`~core.svg_plots.PALETTE`,
    or :data:`PAPER_PALETTE` on paper): the same run looks the same in every figure of a report."""
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


#: Version of how the figures are drawn and written, part of every cached figure's key
#: (:mod:`metrics.services.plot_cache`): raise it when a change draws them differently, so that no
#: figure drawn before is served, even by a deployment whose software version did not change.
DRAWING = 5
#: matplotlib settings of the report's SVGs. Text stays text (``<text>``, 90% of the old SVG's
#: bytes were glyph outlines): the browser sets it in DejaVu Sans, the font matplotlib measures
#: it with (first in the stack, so the layout is unchanged), or in a font of about its width;
#: the page loads no font from anywhere. Ids are hashed with a fixed salt, so the same figure is
#: the same bytes (matplotlib salts them with a random uuid otherwise).
SVG_SETTINGS = {
    "svg.fonttype": "none",
    "svg.hashsalt": "genderbias-metrics-plots",
    "font.sans-serif": ["DejaVu Sans", "Bitstream Vera Sans", "Verdana", "Arial", "Helvetica"],
}


def _svg(figure: Figure) -> bytes:
    """``figure`` in the site's SVG style (:func:`~core.svg_plots.svg_bytes`, which saves one figure
    at a time: matplotlib's settings are global) with :data:`SVG_SETTINGS` (:func:`~core.svg_plots.svg_settings`), in fewer elements
    (:func:`~metrics.svg_markup.lighten`): the same drawing. Text XML cannot hold (a control
    character in a label) is drawn as outlines instead, as before."""
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
    """The panels (indices) of each part of a paper figure of ``count`` panels in ``columns`` columns,
    each row ``row_inches`` high plus ``fixed_inches`` (legend, margins): as many rows in a part as
    keep it within :data:`PAPER_MAX_HEIGHT` (at least one)."""
    rows = max(1, int((PAPER_MAX_HEIGHT - fixed_inches) // row_inches))
    step = rows * columns
    return [range(start, min(start + step, count)) for start in range(0, count, step)] or [range(0)]


#: On paper, a run's name in a legend or beside an axis is broken into lines of at most this many
#: characters (at a separator, or with a hyphen): a long name would run past the figure's edge.
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
    """Bias of every run against the cutoff, one panel per metric and variant (cf. Figure 1 of
    Rekabsaz & Schedl 2020), with the bootstrap 95% CI as a band; ``only`` these panels if given
    (a part of a paper figure, :func:`paper_parts`)."""
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
    if paper:
        _paper_text(figure)
    return _save(figure, format)


def tie_ranges(axes, x, line: pd.DataFrame, color: str) -> None:
    """Beside each figure at ``x`` (its run's rows ``line``), its range over the orders of tied documents
    as :func:`metrics.formatting.figure_notes` decides it (dotted, gid :data:`TIE_RANGE_GID`), and a hollow
    marker on 0 where that range holds it (the ranking does not decide the sign)."""
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
    """Height (inches) of a row of the paper distribution figure's panels: a line per run (less when
    many runs would make one row taller than :data:`PAPER_MAX_HEIGHT`; never under 7 pt type's line)."""
    return 0.7 + max(0.11, min(0.22, (PAPER_MAX_HEIGHT - 0.8) / max(1, runs))) * max(1, runs)


def distribution_figure(
    per_query: pd.DataFrame, cutoff: int, *, format: str = "png", only: list[tuple[str, str]] | None = None
) -> bytes:
    """Per-query distribution of every metric at one cutoff: a box plot per run and panel; ``only``
    these panels if given (a part of a paper figure, :func:`paper_parts`)."""
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
    if paper:
        _paper_text(figure)
    return _save(figure, format)


# --- SVG figures of the report page: one per metric, and fairness against effectiveness -----------


def _legend(figure: Figure, axes, runs: int) -> None:
    """The runs' legend under the plot, in as many columns (up to 3) as fit the figure's width,
    so long run names wrap into rows instead of widening (and so shrinking) the image."""
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
    """One metric (and variant) of every run against the cutoff, the bootstrap 95% CI as error bars:
    an SVG about 4 inches wide that scales (legible at 390 px) and follows dark mode."""
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
    """Fairness against effectiveness: each run a point at (``x``, ``y``) — each a (metric, variant,
    cutoff) of the report — with the bootstrap 95% CIs as error bars both ways, named by its run."""
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
    if paper:
        _paper_text(figure)
    return _save(figure, format)


def label_interval_figure(rows: pd.DataFrame, *, interval: str | None = None, format: str = "svg") -> bytes:
    """One metric at one cutoff of a report on a batch's labels: per run, the value with its
    query-only 95% interval (thin, hollow) above the label-corrected value with the interval that
    also carries the labels' uncertainty (thick, filled; none where it may not cover). ``interval``: which
    interval that is and why (:attr:`metrics.models.Report.interval_sentence`), in the caption. An SVG that
    scales and follows dark mode."""
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


# --- What a paper figure shows, in words: its \Description (ACM) and its alt text --------------------

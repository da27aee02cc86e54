"""The papers' tables as LaTeX (:func:`metrics.tables.build_table`), set with ``booktabs`` at :data:`TABLE_POINTS`,
never scaled, with notes that state the test and correction of each mark a cell carries. Pure, so a notebook can
typeset the same table. Every float is laid out for its template's page (:class:`publishing.latex.Template`): too
wide for the column, across both (``table*``) or split by runs, the baseline in each part; too tall, split by rows.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.figure_notes import CROWD_WARNING, SIGN_WARNING
from core.methods import AUDIT_TEST
from metrics.names import header_lines
from publishing.latex import TEMPLATES, Template, breakable, escape, p_value_tex, prose, template

#: The narrowest text column the tables are laid out for: a two-column ACM ``sigconf`` page's.
COLUMN_POINTS = TEMPLATES["acm"].column
#: The tables' type size (points) and its leading: readable at print size (venues ask for 8 pt or more).
TABLE_POINTS = 8
LEADING = TABLE_POINTS + 1.5
#: Approximate advance of a character of Computer Modern at :data:`TABLE_POINTS` (digits are 0.531 em;
#: letters average a little less), and the space between columns (``\\tabcolsep`` on both sides).
CHAR_POINTS = 0.53 * TABLE_POINTS
COLUMN_SEP = 4.0
_SIZE = rf"\fontsize{{{TABLE_POINTS}}}{{{LEADING:g}}}\selectfont\setlength{{\tabcolsep}}{{{COLUMN_SEP / 2:g}pt}}"
#: A header longer than this many characters is broken into lines (at a space, ``-``, ``_``, ``.``,
#: ``/``, or with a hyphen inside a longer word).
HEADER_CHARS = 9
#: Of a float's height, what its caption and the space around it take, beyond its lines (points).
FLOAT_SKIP = 24.0
#: The share of the text block a float may fill (LaTeX's own ``\\topfraction`` is smaller, but a float
#: that fills a page is placed on a page of floats).
FLOAT_SHARE = 0.9
#: The mark of a figure whose range over the orders of ties holds 0 (:func:`core.figure_notes.figure_notes`).
SIGN_MARK = r"$\ddagger$"
#: The mark of a label-corrected figure whose interval the crowd check warns of (the same decision).
CROWD_MARK = r"$\S$"


def _text_lines(chars: int, width: float, points: float = TABLE_POINTS) -> int:
    """How many lines ``chars`` characters of text at ``points`` take in ``width`` points (a
    generous estimate: 0.5 em a character)."""
    return max(1, -(-int(chars * 0.5 * points) // max(1, int(width))))


def _mark(mark: str) -> str:
    """A mark at the cell's own size (a superscript would be set at 6 pt): ``*``, or ``$\\dagger$`` in math
    (text mode's ``\\dag`` is a TS1 glyph, which pdflatex draws as a bitmap from Debian's fonts)."""
    return {"*": "*", "†": r"$\dagger$"}.get(mark, r"\phantom{*}" if mark == " " else "")


def cell_tex(value: float | None, spec: str = ".4f", mark: str = "") -> str:
    """A figure as the tables set it: the digits in math (``$0.1234$``) and the mark after it at the
    same size (``*``, ``$\\dagger$``); ``--`` for none."""
    from metrics.tables import number_text

    if value is None:
        return "--"
    return f"${number_text(value, spec)}${_mark(mark)}"


def half_width(low: float | None, high: float | None) -> float | None:
    """Half the width of an interval (``None`` when either end is missing)."""
    return None if _missing(low) or _missing(high) else (high - low) / 2


def _header(name: str) -> str:
    """A run's name as a column head or row label, in :func:`header_lines`."""
    parts = header_lines(name, HEADER_CHARS)
    if len(parts) <= 1:
        return escape(name)
    return r"\begin{tabular}[b]{@{}c@{}}" + r"\\".join(escape(part) for part in parts) + r"\end{tabular}"


def _width(chars: int) -> float:
    return chars * CHAR_POINTS + COLUMN_SEP


def run_chunks(
    runs: Sequence[str],
    label_chars: int,
    cell_chars: int,
    width: float = COLUMN_POINTS,
    baseline: int | None = None,
) -> list[list[int]]:
    """The run indices of each part of a table: as many runs side by side as fit ``width`` points after the label
    column, the ``baseline`` (its index) first in every part, so each part reads against it."""

    def need(i: int) -> float:
        return _width(max(cell_chars, min(len(runs[i]), HEADER_CHARS)))

    room = width - _width(label_chars)
    first = [baseline] if baseline is not None else []
    chunks: list[list[int]] = [list(first)]
    used = sum(need(i) for i in first)
    for i in range(len(runs)):
        if i == baseline:
            continue
        if len(chunks[-1]) > len(first) and used + need(i) > room:
            chunks.append(list(first))
            used = sum(need(j) for j in first)
        chunks[-1].append(i)
        used += need(i)
    return chunks


def table_label(table: dict) -> str:
    """The ``\\label`` of a table: ``tab:<layout>``."""
    return f"tab:{table['layout']}"


def tie_range_tex(cell: dict) -> str:
    """A cell's range over the orders of tied documents as the tables set it under the value
    (``[lowest, highest]``), with :data:`SIGN_MARK` where it holds 0; empty where no order of ties moves it."""
    if cell.get("tie_low") is None:
        return ""
    mark = SIGN_MARK if cell.get("sign_undecided") else r"\phantom{" + SIGN_MARK + "}"
    return rf"$[{cell['tie_low']:.3f}, {cell['tie_high']:.3f}]${mark}"


def ties_notes(ties: bool, undecided: bool) -> list[str]:
    """The notes of a table whose cells carry ranges over the orders of ties, and the sign warning."""
    notes = []
    if ties:
        notes.append(
            "In brackets under a value: its lowest and highest over every order of tied documents (equal "
            "scores), where the order of ties moves it; the value is their mean over the orders."
        )
    if undecided:
        notes.append(rf"{SIGN_MARK}\,the range over the orders of ties holds 0: {escape(SIGN_WARNING)} of the bias.")
    return notes


def table_notes(
    table: dict, marks: set[str] | None = None, intervals: bool = False, ties: bool = False, undecided: bool = False
) -> list[str]:
    """The table's notes: each policy (a mark stated only when a cell carries it, else that nothing differs), the
    intervals, the ties (:func:`ties_notes`), the exposure metrics' definitions and the columns the report lacks."""
    marks = {"*", "†"} if marks is None else marks
    notes = []
    policy = table.get("significance")
    if table.get("baseline") and policy:
        rule = (
            f"test: {escape(policy['test'])}; family: {escape(policy['family'])}; "
            rf"correction: {escape(policy['correction'])} \cite{{holm1979}}"
        )
        if "*" in marks:
            notes.append(rf"*\,$p < {policy['alpha']}$ (adjusted) against {breakable(policy['baseline'])}; {rule}.")
        else:
            notes.append(
                rf"No run differs from {breakable(policy['baseline'])} at $p < {policy['alpha']}$ (adjusted); {rule}."
            )
    if table["correlations"]:
        corr = table["correlation_significance"]
        said = "" if "†" in marks else "no correlation is significant; "
        notes.append(
            (rf"$\dagger$\,correlation with $p < {corr['alpha']}$: " if "†" in marks else "Correlations: ")
            + f"{said}{escape(corr['test'])}; family: {escape(corr['family'])}; "
            + rf"{escape(corr['correction'])}-adjusted \cite{{holm1979}}. Kendall's $\tau$ is $\tau$-b \cite{{kendall1945}}."
        )
    if intervals:
        notes.append(
            r"$\pm$: half the width of the 95\% percentile bootstrap interval over the queries \cite{efron1979}."
        )
    notes += ties_notes(ties, undecided)
    notes += [prose(definition) for definition in table.get("definitions", [])]
    if table["missing"]:
        notes.append(f"Not in this report: {escape(', '.join(table['missing']))}.")
    return notes


def _caption_cutoffs(table: dict) -> str:
    cutoffs = sorted({int(column["cutoff"]) for column in table["columns"] if column.get("cutoff") is not None})
    if not cutoffs:
        return ""
    listed = ", ".join(map(str, cutoffs[:-1])) + f" and {cutoffs[-1]}" if len(cutoffs) > 1 else str(cutoffs[0])
    return f"cutoff{'s' if len(cutoffs) > 1 else ''} {listed}"


def table_tex(table: dict, caption: str | None = None, layout: str | Template | None = None) -> str:
    """One table as floats that fit the page of ``layout`` (a :data:`TEMPLATES` name): a row per measure, a column
    per run, each cell the run's mean with its mark and, under it, ± half its 95% interval; then, per correlated
    pair, Pearson's r and Kendall's τ of each run. In a column if the runs fit, else across both columns, else
    split by runs (the module docstring)."""
    page = template(layout)
    runs = [row["run"] for row in table["rows"]]
    labels = [escape(column["label"]) for column in table["columns"]]
    label_chars = max([len(column["label"]) for column in table["columns"]] + [10 if table["correlations"] else 3])
    baseline = runs.index(table["baseline"]) if table.get("baseline") in runs else None
    cells_all = [cell for row in table["rows"] for cell in row["cells"]]
    ties = any(cell.get("tie_low") is not None for cell in cells_all)
    undecided = any(cell.get("sign_undecided") for cell in cells_all)
    cell_chars = 16 if ties else 9  # ``[-0.189, 0.137]`` and its mark under a value
    wide = False
    chunks = run_chunks(runs, label_chars, cell_chars, page.column)
    if len(chunks) > 1 and page.two_columns:
        wide = True
        chunks = run_chunks(runs, label_chars, cell_chars, page.text_width)
    if len(chunks) > 1:
        chunks = run_chunks(runs, label_chars, cell_chars, page.text_width if wide else page.column, baseline)
    environment = "table*" if wide else "table"
    marks = {cell["mark"] for row in table["rows"] for cell in row["cells"] if cell["mark"]}
    marks |= {
        r[f"{kind}_mark"]
        for row in table["rows"]
        for r in row["correlations"]
        for kind in ("pearson", "kendall")
        if r[f"{kind}_mark"]
    }
    intervals = any(
        half_width(cell.get("ci_low"), cell.get("ci_high")) is not None
        for row in table["rows"]
        for cell in row["cells"]
    )
    what = f"{escape(caption or table['title'])}: each run's mean over the queries"
    cutoffs = _caption_cutoffs(table)
    what += f" (rows: measures at {cutoffs}" if cutoffs else " (rows: measures"
    what += "; columns: runs)"
    what += r", $\pm$ half its 95\% interval" if intervals else ""
    what += ", in brackets its range over the orders of tied documents" if ties else ""
    parts = []
    for number_, chunk in enumerate(chunks):
        n = len(chunk)
        lines = [rf"\begin{{{environment}}}[tbp]", r"\centering", _SIZE]
        shown = what
        if len(chunks) > 1:
            others = [i for i in chunk if i != baseline]
            shown += f"; part {number_ + 1} of {len(chunks)}: runs {others[0] + 1}--{others[-1] + 1} of {len(runs)}"
            shown += f", beside the baseline {breakable(runs[baseline])}" if baseline is not None else ""
        if len(chunks) > 1 and number_ < len(chunks) - 1:
            shown += "; notes under the last part"
        lines += [
            rf"\caption{{{shown}.}}",
            rf"\label{{{table_label(table)}{'' if number_ == 0 else f'-{number_ + 1}'}}}",
            r"\smallskip",  # a caption above the table, clear of its top rule
        ]
        lines += [r"\begin{tabular}{@{}l" + "r" * n + "@{}}", r"\toprule"]
        lines.append(" & ".join(["", *(_header(runs[i]) for i in chunk)]) + r" \\")
        lines.append(r"\midrule")
        previous = None
        for c, (column, label_) in enumerate(zip(table["columns"], labels, strict=True)):
            group = column.get("cutoff") if str(column.get("metric")) in ("RaB", "ARaB") else None
            if previous is not None and group != previous:
                lines.append(r"\addlinespace[2pt]")
            previous = group
            cells = [table["rows"][i]["cells"][c] for i in chunk]
            lines.append(
                " & ".join([label_, *(cell_tex(cell["value"], ".4f", cell["mark"]) for cell in cells)]) + r" \\"
            )
            halves = [half_width(cell.get("ci_low"), cell.get("ci_high")) for cell in cells]
            if any(h is not None for h in halves):
                lines.append(
                    " & ".join(["", *("" if h is None else rf"$\pm {h:.4f}$\phantom{{*}}" for h in halves)])
                    + r" \\[1pt]"
                )
            ranges = [tie_range_tex(cell) for cell in cells]
            if any(ranges):
                lines.append(" & ".join(["", *ranges]) + r" \\[1pt]")
        for p, pair in enumerate(table["correlations"]):
            lines += [
                r"\midrule",
                rf"\multicolumn{{{n + 1}}}{{@{{}}l}}{{Over the queries: {escape(pair['a'])} vs {escape(pair['b'])}}} \\",
            ]
            for kind, name, stat in (
                ("pearson", "Pearson $r$", "pearson_r"),
                ("kendall", r"Kendall $\tau$", "kendall_tau"),
            ):
                results = [table["rows"][i]["correlations"][p] for i in chunk]
                lines.append(
                    " & ".join([name, *(cell_tex(r[stat], "+.3f", r[f"{kind}_mark"]) for r in results)]) + r" \\"
                )
        lines += [r"\bottomrule", r"\end{tabular}"]
        notes = table_notes(table, marks, intervals, ties, undecided) if number_ == len(chunks) - 1 else []
        if notes:
            lines += [r"\par\smallskip", r"\begin{minipage}{\linewidth}" + _SIZE]
            lines += [note + (r"\\" if i < len(notes) - 1 else "") for i, note in enumerate(notes)]
            lines.append(r"\end{minipage}")
        lines.append(rf"\end{{{environment}}}")
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


def _missing(value) -> bool:
    return value is None or value != value  # None or NaN


def _pack(blocks: Sequence[tuple[list[str], float]], room: float) -> list[list[str]]:
    """``blocks`` (lines, height in points) in parts of at most ``room`` points each, in order (a block
    taller than ``room`` alone in its part)."""
    parts: list[list[str]] = [[]]
    used = 0.0
    for lines, height in blocks:
        if parts[-1] and used + height > room:
            parts.append([])
            used = 0.0
        parts[-1] += lines
        used += height
    return parts


def _caption_height(chars: int, width: float) -> float:
    return FLOAT_SKIP + (TABLE_POINTS + 3) * _text_lines(chars, width, TABLE_POINTS + 2)


def uncertainty_tex(
    rows: Sequence[dict],
    cutoff: int,
    baseline: str | None,
    alpha: float = 0.05,
    layout: str | Template | None = None,
    chosen: dict | None = None,
) -> str:
    """A report on a batch's labels at one cutoff (``rows``: its results there), as
    :func:`metrics.formatting.uncertainty_table` shows it, the differences against the baseline in tables of their
    own; a row with ``crowd_warning`` has its corrected value marked :data:`CROWD_MARK`. A column wide, split by
    metric into parts no taller than the text block (``tab:labels``, ``tab:labels-2``…). ``chosen``: which interval
    the corrected values got and why (said in the note; where they may not cover, none is printed)."""
    from metrics.formatting import p_mark

    page = template(layout)
    withheld = (chosen or {}).get("kind") == "may_not_cover"

    def value(number_, low, high) -> str:
        if _missing(number_):
            return "--"
        half = half_width(low, high)
        return cell_tex(number_) + ("" if half is None else rf" $\pm {half:.4f}$")

    def interval(low, high) -> str:
        return "--" if _missing(low) or _missing(high) else f"$[{low:.3f}, {high:.3f}]$"

    def height(run: str) -> float:
        return LEADING * len(header_lines(run, HEADER_CHARS))

    groups: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        groups.setdefault((row["metric"], row["variant"]), []).append(row)
    marked = False
    values: list[tuple[list[str], float]] = []
    against: list[tuple[list[str], float]] = []
    rule = 4.0  # a \midrule with its space
    for (metric, variant), part in groups.items():
        heading = rf"\multicolumn{{4}}{{@{{}}l}}{{\emph{{{escape(metric)} {{[}}{escape(variant)}{{]}} @{cutoff}}}}} \\"
        block, block_height = [r"\midrule", heading], rule + LEADING
        differences, differences_height = [r"\midrule", heading], rule + LEADING
        for row in part:
            share = row.get("label_share")
            block.append(
                " & ".join(
                    [
                        _header(str(row["run"])),
                        value(row.get("value"), row.get("ci_low"), row.get("ci_high")),
                        value(row.get("corrected"), row.get("combined_low"), row.get("combined_high"))
                        + (CROWD_MARK if row.get("crowd_warning") else "")
                        + (" (may not cover)" if withheld and not _missing(row.get("corrected")) else ""),
                        "--" if _missing(share) else f"{share:.0%}".replace("%", r"\%"),
                    ]
                )
                + r" \\"
            )
            block_height += height(str(row["run"]))
            if baseline and row["run"] != baseline:
                p = row.get("p_value")
                mark = p_mark(None if _missing(p) else p, alpha)
                marked = marked or bool(mark)
                p_text = "--" if _missing(p) else p_value_tex(p) + _mark(mark)
                differences.append(
                    " & ".join(
                        [
                            _header(str(row["run"])),
                            interval(row.get("difference_low"), row.get("difference_high")),
                            "may not cover"
                            if withheld
                            else interval(row.get("difference_combined_low"), row.get("difference_combined_high")),
                            p_text,
                        ]
                    )
                    + r" \\"
                )
                differences_height += height(str(row["run"]))
        values.append((block, block_height))
        if len(differences) > 2:
            against.append((differences, differences_height))
    test = (
        "bootstrap test of the label-corrected paired difference, "
        r"Holm-adjusted \cite{holm1979} within each metric, variant and cutoff."
    )
    audited = (chosen or {}).get("kind") == "audit"  # PPI++ on the audit sample (genderbias.crowd.figure_intervals)
    if audited:
        test = escape(AUDIT_TEST) + r", Holm-adjusted \cite{holm1979} within each metric, variant and cutoff."
    corrected = (
        "estimated from the crowd's labels and the expert audit sample by prediction-powered inference (PPI++)"
        if audited
        else "estimated from every judged query's label probabilities; its interval resamples the queries and "
        "re-fits the labels' class means"
    )
    note = (
        "Value: the mean over the queries labelled non-gendered, $\\pm$ half its query-only 95\\% bootstrap interval "
        f"\\cite{{efron1979}}. Corrected: the mean over the truly non-gendered queries, {corrected}. "
        "Labels: the share of that interval's width the labels contribute."
    )
    if chosen and chosen.get("sentence"):
        note += f" Corrected intervals: {escape(chosen['sentence'])}."
    if any(row.get("crowd_warning") for row in rows):
        note += rf" {CROWD_MARK}\,{escape(CROWD_WARNING)}: see the crowd's informativeness in the methods."
    if baseline:
        note += (rf" *\,$p < {alpha}$: " if marked else rf" No run differs at $p < {alpha}$; $p$: ") + test
    caption = (
        f"Values with the labels' uncertainty at cutoff {cutoff}: each run's mean $\\pm$ half its 95\\% interval"
        + (
            rf"; Table~\ref{{tab:labels-differences}}: each run's difference from {breakable(baseline)}"
            if baseline and against
            else ""
        )
        + "."
    )
    caption_against = (
        rf"Each run's difference from the baseline {breakable(baseline)} at cutoff {cutoff} with its 95\% intervals: "
        "over the queries only, and with the labels' uncertainty; $p$ of the combined test."
        if baseline
        else ""
    )
    width = page.column
    head = LEADING + 2 * rule  # the column heads, the top and bottom rules
    notes_height = LEADING * _text_lines(len(note), width) + 6
    room = page.text_height * FLOAT_SHARE - head
    sections = [
        ("labels", caption, r"Run & Value & Corrected & Labels \\", values),
        ("labels-differences", caption_against, r"Run & $\Delta$ query-only & $\Delta$ with labels & $p$ \\", against),
    ]
    sections = [(label, text, columns, blocks) for label, text, columns, blocks in sections if blocks] or [
        ("labels", caption, sections[0][2], [([], 0.0)])  # no rows: the table's head and its notes
    ]
    floats = []
    for s, (label, text, columns, blocks) in enumerate(sections):
        # Every part leaves room for its caption; those of the last section for the notes under its last part.
        fits = room - _caption_height(len(text), width) - (notes_height if s == len(sections) - 1 else 0)
        parts = _pack(blocks, fits)
        for number_, body in enumerate(parts):
            shown = text if number_ == 0 else f"{text.rstrip('.')} (continued, part {number_ + 1} of {len(parts)})."
            lines = [r"\begin{table}[tbp]", r"\centering", _SIZE, rf"\caption{{{shown}}}"]
            lines.append(rf"\label{{tab:{label}{'' if number_ == 0 else f'-{number_ + 1}'}}}")
            lines += [r"\smallskip", r"\begin{tabular}{@{}lrrr@{}}", r"\toprule", columns, *body, r"\bottomrule"]
            lines.append(r"\end{tabular}")
            floats.append(lines)
    floats[-1] += [r"\par\smallskip", r"\begin{minipage}{\linewidth}" + _SIZE, note, r"\end{minipage}"]
    return "\n".join("\n".join([*lines, r"\end{table}"]) for lines in floats) + "\n"

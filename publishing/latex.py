"""The papers' tables and the bundle's document as LaTeX: the same tables the report page and
``bias_report --table`` show (:func:`metrics.tables.build_table`, :func:`metrics.tables.table_text`),
set with ``booktabs``, marks as superscripts and footnotes that state the test and correction.

Pure (no Django, no heavy imports): every function takes the plain data the selectors return
and gives LaTeX source, so a notebook can typeset the same table. Only what Debian's
``texlive-latex-base``/``-latex-recommended`` hold is used (``booktabs``, ``graphicx``,
``amsmath``), so a bundle compiles on a stock installation.

Text from the platform (run names, titles, policies) goes through :func:`escape`: the ten
characters LaTeX treats specially are escaped, the few Unicode signs the tables use (τ, †, –, ≥…)
become their LaTeX commands, accented Latin letters stay (``inputenc`` composes them), and any
other character becomes ``?`` (pdflatex with its default fonts cannot set it), so a name never
breaks a compile. The document keeps LaTeX's default font encoding: T1 would need fonts
(cm-super, lmodern) that Debian's recommended set lacks, and pdflatex would draw bitmaps.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from core.p_values import p_value_text
from publishing.checklists import SHORT_SOURCES, SOURCES, TO_ANSWER
from publishing.screenshot import PRINT_POINTS_PER_PIXEL, WINDOW

#: LaTeX's special characters and their text-mode escapes (brackets too: ``[`` after ``\\`` is read
#: as the row's optional argument).
_SPECIAL = {
    "\\": r"$\backslash$",
    "&": r"\&",
    "%": r"\%",
    "$": r"$\$$",  # math's dollar is the Computer Modern Type 1 one; text's \$ would pull a TS1 bitmap font
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\~{}",
    "^": r"\^{}",
    "[": "{[}",
    "]": "{]}",
    "<": "$<$",
    ">": "$>$",
    "|": "$|$",
}
#: The Unicode signs the platform's texts use, as LaTeX.
_UNICODE = {
    "τ": r"$\tau$",
    "α": r"$\alpha$",
    "κ": r"$\kappa$",
    "δ": r"$\delta$",
    "μ": r"$\mu$",
    "β": r"$\beta$",
    "π": r"$\pi$",
    "Σ": r"$\Sigma$",
    "ε": r"$\varepsilon$",
    "†": r"$^{\dagger}$",
    "–": "--",
    "—": "---",
    "−": "$-$",
    "≥": r"$\geq$",
    "≤": r"$\leq$",
    "±": r"$\pm$",
    "×": r"$\times$",
    "→": r"$\rightarrow$",
    "≈": r"$\approx$",
    "·": r"$\cdot$",
    "…": r"\ldots{}",
    "‘": "`",
    "’": "'",
    "“": "``",
    "”": "''",
    "\u00a0": "~",
}


#: The accented letters of Latin-1 that LaTeX's default (OT1) fonts compose (not Ð, Þ, ð, þ).
_LATIN = frozenset(chr(c) for c in range(0xC0, 0x100)) - set("×÷ÐÞðþ")


def escape(text: object) -> str:
    """``text`` safe in LaTeX's text mode (see the module docstring)."""
    out = []
    for char in str(text):
        if char in _SPECIAL:
            out.append(_SPECIAL[char])
        elif char in _UNICODE:
            out.append(_UNICODE[char])
        elif ord(char) < 0x20:
            out.append(" ")
        elif ord(char) > 0x7E and char not in _LATIN:
            out.append("?")
        else:
            out.append(char)
    return "".join(out)


#: A symbol with a subscript in the platform's texts (``w_r``, ``ε_g``, ``TE_G``), for :func:`prose`.
_SUBSCRIPT = re.compile(r"(?<![\w\\])([A-Za-zα-ωΑ-Ω]{1,2})_(\{[^}]*\}|[A-Za-z0-9]+)(?![\w])")


def prose(text: object) -> str:
    """:func:`escape`, with the symbols the platform's texts write as ``w_r``, ``ε_g`` or ``TE_G`` set as
    math (``$w_{r}$``): a subscript in text mode would print as ``w\\_r``."""
    out, last = [], 0
    for match in _SUBSCRIPT.finditer(str(text)):
        out.append(escape(str(text)[last : match.start()]))
        base = escape(match.group(1)).strip("$")
        sub = match.group(2).strip("{}")
        out.append(rf"${base}_{{{escape(sub).strip('$')}}}$")
        last = match.end()
    out.append(escape(str(text)[last:]))
    return "".join(out)


def p_value_tex(value: float | None) -> str:
    """A p-value as :func:`core.p_values.p_value_text` writes it, in LaTeX text (``$<$ 0.0001``)."""
    return p_value_text(value).replace("<", "$<$")


#: The narrowest text column the tables are laid out for: a two-column ACM ``sigconf`` page's
#: (241 pt; Springer LNCS's one column is 346 pt). A table wider than this is split by runs into
#: several tables, never scaled: its type stays :data:`TABLE_POINTS`.
COLUMN_POINTS = 241.0
#: The tables' type size (points) and its leading: readable at print size (venues ask for 8 pt or more).
TABLE_POINTS = 8
#: Approximate advance of a character of Computer Modern at :data:`TABLE_POINTS` (digits are 0.531 em;
#: letters average a little less), and the space between columns (``\tabcolsep`` on both sides).
CHAR_POINTS = 0.53 * TABLE_POINTS
COLUMN_SEP = 4.0
_SIZE = (
    rf"\fontsize{{{TABLE_POINTS}}}{{{TABLE_POINTS + 1.5:g}}}\selectfont\setlength{{\tabcolsep}}{{{COLUMN_SEP / 2:g}pt}}"
)
#: A header longer than this many characters is broken into lines (at ``-``, ``_``, ``.`` or anywhere).
HEADER_CHARS = 9


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
    """A run's name as a column head, broken into lines of at most :data:`HEADER_CHARS` characters."""
    parts, line = [], ""
    for piece in re.split(r"(?<=[-_./])", name):
        while len(piece) > HEADER_CHARS:
            if line:
                parts.append(line)
                line = ""
            parts.append(piece[:HEADER_CHARS])
            piece = piece[HEADER_CHARS:]
        if len(line) + len(piece) > HEADER_CHARS and line:
            parts.append(line)
            line = ""
        line += piece
    if line:
        parts.append(line)
    if len(parts) <= 1:
        return escape(name)
    return r"\begin{tabular}[b]{@{}c@{}}" + r"\\".join(escape(part) for part in parts) + r"\end{tabular}"


def _width(chars: int) -> float:
    return chars * CHAR_POINTS + COLUMN_SEP


def run_chunks(runs: Sequence[str], label_chars: int, cell_chars: int, width: float = COLUMN_POINTS) -> list[list[int]]:
    """The runs (their indices) of each part of a table whose rows are measures and columns runs:
    as many runs side by side as fit ``width`` points after the label column, the rest in the next part."""
    room = width - _width(label_chars)
    chunks: list[list[int]] = [[]]
    used = 0.0
    for i, run in enumerate(runs):
        need = _width(max(cell_chars, min(len(run), HEADER_CHARS)))
        if chunks[-1] and used + need > room:
            chunks.append([])
            used = 0.0
        chunks[-1].append(i)
        used += need
    return chunks


def table_label(table: dict) -> str:
    """The ``\\label`` of a table: ``tab:<layout>``."""
    return f"tab:{table['layout']}"


def table_notes(table: dict, marks: set[str] | None = None, intervals: bool = False) -> list[str]:
    """The table's notes: the significance policy (test, family, correction; the mark stated only
    when a cell carries it, else that no run differs), the correlations' policy, the intervals, how
    its exposure metrics are defined and the columns the report lacks."""
    marks = {"*", "†"} if marks is None else marks
    notes = []
    policy = table.get("significance")
    if table.get("baseline") and policy:
        rule = (
            f"test: {escape(policy['test'])}; family: {escape(policy['family'])}; "
            rf"correction: {escape(policy['correction'])} \cite{{holm1979}}"
        )
        if "*" in marks:
            notes.append(
                rf"*\,$p < {policy['alpha']}$ (adjusted) against \texttt{{{escape(policy['baseline'])}}}; {rule}."
            )
        else:
            notes.append(
                rf"No run differs from \texttt{{{escape(policy['baseline'])}}} at $p < {policy['alpha']}$ (adjusted); {rule}."
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


def table_tex(table: dict, caption: str | None = None) -> str:
    """One table (:func:`metrics.tables.build_table`'s dict) as ``table`` floats that fit a column of
    :data:`COLUMN_POINTS` at :data:`TABLE_POINTS` type, never scaled: a row per measure (its label names
    the cutoff), a column per run, each cell the run's mean over the queries with its mark (``*``
    against the baseline) and, under it, ± half the width of its bootstrap 95% interval; then, per
    correlated pair, Pearson's r and Kendall's τ of each run (``†``). Runs that do not fit side by side
    go to a second part (a float of its own). The notes state the test, family and correction of each
    mark a cell carries, and only of those."""
    runs = [row["run"] for row in table["rows"]]
    labels = [escape(column["label"]) for column in table["columns"]]
    label_chars = max([len(column["label"]) for column in table["columns"]] + [10 if table["correlations"] else 3])
    chunks = run_chunks(runs, label_chars, 9)
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
    parts = []
    for number_, chunk in enumerate(chunks):
        n = len(chunk)
        lines = [r"\begin{table}[tbp]", r"\centering", _SIZE]
        shown = what + (f"; runs {chunk[0] + 1}--{chunk[-1] + 1} of {len(runs)}" if len(chunks) > 1 else "")
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
        notes = table_notes(table, marks, intervals) if number_ == len(chunks) - 1 else []
        if notes:
            lines += [r"\par\smallskip", r"\begin{minipage}{\linewidth}" + _SIZE]
            lines += [note + (r"\\" if i < len(notes) - 1 else "") for i, note in enumerate(notes)]
            lines.append(r"\end{minipage}")
        lines.append(r"\end{table}")
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


def figure_tex(file: str, caption: str, label: str, width: str | None = None) -> str:
    """A ``figure`` float including ``file`` (a PDF of the bundle) at its natural size: the figures are
    drawn as wide as a column (:data:`metrics.plots.PAPER_WIDTH`) with their type at 7 pt or more, so
    neither scaling down (smaller type) nor up (larger than the text's) is needed; ``width`` overrides."""
    option = f"[width={width}]" if width else ""
    return "\n".join(
        [
            r"\begin{figure}[tbp]",
            r"\centering",
            rf"\includegraphics{option}{{{file}}}",
            rf"\caption{{{escape(caption)}}}",
            rf"\label{{{label}}}",
            r"\end{figure}",
            "",
        ]
    )


def document(
    title: str,
    tables: Sequence[str],
    figures: Sequence[str],
    intro: str = "",
    limitations: bool = False,
    checklist: bool = False,
) -> str:
    """A minimal article that ``\\input``s ``methods.tex``, each table's and figure's ``.tex`` (names
    without the suffix) and the bibliography: the bundle compiles as it is (``pdflatex``, ``bibtex``,
    ``pdflatex`` twice)."""
    lines = [
        r"\documentclass[11pt]{article}",
        r"\usepackage[utf8]{inputenc}",
        r"\usepackage{amsmath}",
        r"\usepackage{booktabs}",
        r"\usepackage{graphicx}",
        r"\begin{document}",
        rf"\title{{{escape(title)}}}",
        r"\author{}",
        r"\date{}",
        r"\maketitle",
        r"\section*{Method}",
        r"\input{methods}",
    ]
    if intro:
        lines.append(intro)
    lines += [rf"\input{{{name}}}" for name in tables]
    lines += [rf"\input{{{name}}}" for name in figures]
    if limitations:
        lines += [r"\section*{Limitations}", r"\input{limitations}"]
    lines += [r"\bibliographystyle{plain}", r"\bibliography{references}"]
    if checklist:  # after the references, as the venues place their checklists
        lines += [r"\appendix", r"\section*{Checklists}", r"\input{checklist}"]
    lines += [r"\end{document}", ""]
    return "\n".join(lines)


def _missing(value) -> bool:
    return value is None or value != value  # None or NaN


def uncertainty_tex(rows: Sequence[dict], cutoff: int, baseline: str | None, alpha: float = 0.05) -> str:
    """A report on a batch's labels at one cutoff (``rows``: its results there, as dicts with the
    fields of :data:`metrics.defaults.LABEL_UNCERTAINTY_COLUMNS`), as the report page and
    :func:`metrics.formatting.uncertainty_table` show it: per metric and variant, each run's value with
    ± half its query-only 95% interval, the label-corrected value with ± half the interval that also
    carries the labels' uncertainty, and the labels' share of that width; against the baseline, the
    difference's two intervals and the combined test's p (``*``: p < ``alpha``), in a second tabular
    under the first, so that the table fits a column (:data:`COLUMN_POINTS`) at :data:`TABLE_POINTS`."""

    from metrics.formatting import p_mark

    def value(number_, low, high) -> str:
        if _missing(number_):
            return "--"
        half = half_width(low, high)
        return cell_tex(number_) + ("" if half is None else rf" $\pm {half:.4f}$")

    def interval(low, high) -> str:
        return "--" if _missing(low) or _missing(high) else f"$[{low:.3f}, {high:.3f}]$"

    groups: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        groups.setdefault((row["metric"], row["variant"]), []).append(row)
    marked = False
    values = [r"\begin{tabular}{@{}lrrr@{}}", r"\toprule", r"Run & Value & Corrected & Labels \\"]
    against = [
        r"\begin{tabular}{@{}lrrr@{}}",
        r"\toprule",
        r"Run & $\Delta$ query-only & $\Delta$ with labels & $p$ \\",
    ]
    for (metric, variant), part in groups.items():
        heading = rf"\multicolumn{{4}}{{@{{}}l}}{{\emph{{{escape(metric)} {{[}}{escape(variant)}{{]}} @{cutoff}}}}} \\"
        values += [r"\midrule", heading]
        against += [r"\midrule", heading]
        for row in part:
            share = row.get("label_share")
            values.append(
                " & ".join(
                    [
                        _header(str(row["run"])),
                        value(row.get("value"), row.get("ci_low"), row.get("ci_high")),
                        value(row.get("corrected"), row.get("combined_low"), row.get("combined_high")),
                        "--" if _missing(share) else f"{share:.0%}".replace("%", r"\%"),
                    ]
                )
                + r" \\"
            )
            if baseline and row["run"] != baseline:
                p = row.get("p_value")
                mark = p_mark(None if _missing(p) else p, alpha)
                marked = marked or bool(mark)
                p_text = "--" if _missing(p) else p_value_tex(p) + _mark(mark)
                against.append(
                    " & ".join(
                        [
                            _header(str(row["run"])),
                            interval(row.get("difference_low"), row.get("difference_high")),
                            interval(row.get("difference_combined_low"), row.get("difference_combined_high")),
                            p_text,
                        ]
                    )
                    + r" \\"
                )
    values += [r"\bottomrule", r"\end{tabular}"]
    against += [r"\bottomrule", r"\end{tabular}"]
    caption = (
        f"Values with the labels' uncertainty at cutoff {cutoff}: each run's mean $\\pm$ half its 95\\% interval"
        + (
            rf"; below, each run's difference from \texttt{{{escape(baseline)}}} with its 95\% intervals"
            if baseline
            else ""
        )
        + "."
    )
    lines = [r"\begin{table}[tbp]", r"\centering", _SIZE, rf"\caption{{{caption}}}", r"\label{tab:labels}"]
    lines += [r"\smallskip", *values]
    if baseline:
        lines += [r"\par\medskip", *against]
    test = (
        "bootstrap test of the label-corrected paired difference, "
        r"Holm-adjusted \cite{holm1979} within each metric, variant and cutoff."
    )
    lines += [
        r"\par\smallskip",
        r"\begin{minipage}{\linewidth}" + _SIZE,
        "Value: the mean over the queries labelled non-gendered, $\\pm$ half its query-only 95\\% bootstrap interval "
        "\\cite{efron1979}. Corrected: the mean over the truly non-gendered queries, estimated from every judged "
        "query's label probabilities; its interval resamples the queries and re-fits the labels' class means. "
        "Labels: the share of that interval's width the labels contribute."
        + (
            (rf" *\,$p < {alpha}$: " if marked else rf" No run differs at $p < {alpha}$; $p$: ") + test
            if baseline
            else ""
        ),
        r"\end{minipage}",
        r"\end{table}",
    ]
    return "\n".join(lines) + "\n"


def checklist_tex(items: Sequence, page: dict | None) -> str:
    """``checklist.tex``: the venues' annotator and language-model questions
    (:func:`publishing.checklists.checklist_items`) with their answers from the records, the
    instructions as the task page showed them and its screenshot (a figure a column wide) when taken.
    What only the authors can answer is set in bold, to be found before submitting."""

    venues = list(dict.fromkeys(item.venue for item in items))

    lines = [
        "% Generated from the study's records by the platform's paper bundle: fill in every",
        f"% {TO_ANSWER} before submitting. Questions quoted from:",
        *(f"%   {venue}: {SOURCES[venue]}" for venue in venues),
    ]
    for venue in venues:
        lines += [
            rf"\paragraph{{{escape(SHORT_SOURCES[venue])}.}}",
            r"\begin{description}",
        ]
        for item in (i for i in items if i.venue == venue):
            answer = rf"\textbf{{{escape(item.answer)}}}" if item.answer == TO_ANSWER else escape(item.answer)
            lines.append(
                rf"\item[{escape(item.key)}] \emph{{{escape(item.question)}}} Answer: {answer}. {escape(item.text)}"
            )
            if item.researcher:
                lines.append(r"\textbf{" + escape(TO_ANSWER) + "}" + escape(item.researcher.removeprefix(TO_ANSWER)))
        lines.append(r"\end{description}")
    if page:
        lines += [r"\paragraph{Instructions as shown on the task page.}", r"\begin{quote}"]
        lines.append("\\\\\n".join(escape(line) for line in page["instructions"].splitlines()))
        lines.append(r"\end{quote}")
        if page.get("screenshot"):
            # Across both columns of a two-column page (figure*), at a width that prints the page's body
            # type at 7 pt: a column-wide screenshot would set it at 4 pt.
            width = f"{WINDOW[0] * PRINT_POINTS_PER_PIXEL:.0f}pt"
            lines += [
                r"\begin{figure*}[tbp]",
                r"\centering",
                rf"\includegraphics[width={width}]{{{page['screenshot']}}}",
                r"\caption{The task page as annotators saw it, with the batch's first queries.}",
                r"\label{fig:task-page}",
                r"\end{figure*}",
            ]
    return "\n".join(lines) + "\n"

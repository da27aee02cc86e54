"""The papers' tables and the bundle's document as LaTeX: the same tables the report page and
``bias_report --table`` show (:func:`metrics.tables.build_table`, :func:`metrics.tables.table_text`),
set with ``booktabs``, marks as superscripts and footnotes that state the test and correction.

Pure (no Django, no heavy imports): every function takes the plain data the selectors return
and gives LaTeX source, so a notebook can typeset the same table. Only what Debian's
``texlive-latex-base``/``-latex-recommended`` hold is used in the tables and figures (``booktabs``,
``graphicx``, ``amsmath``); ``main.tex`` is set in one of :data:`TEMPLATES`: the plain ``article``, or a
venue's real class, ACM's ``acmart`` (``sigconf``, two columns) or Springer's ``llncs`` (one column),
from Debian's ``texlive-publishers`` (acmart also needs ``texlive-latex-extra``). Every float is laid
out for its template's column, text width and text height (:class:`Template`): a table too wide for
the column goes across both columns (``table*``) or is split by runs with the baseline repeated in
each part, a table too tall is split by its row groups, a figure is drawn no taller than the text
block (:data:`metrics.plots.PAPER_MAX_HEIGHT`) and carries a ``\\Description`` of its data (ACM's
accessibility text; a no-op elsewhere).

Text from the platform (run names, titles, policies) goes through :func:`escape`: the ten
characters LaTeX treats specially are escaped, the few Unicode signs the tables use (τ, †, –, ≥…)
become their LaTeX commands, accented Latin letters stay (``inputenc`` composes them), and any
other character becomes ``?`` (pdflatex with its default fonts cannot set it), so a name never
breaks a compile. The document uses the T1 font encoding, its fonts the Type 1 outlines of Debian's
``cm-super`` (without it pdflatex would draw bitmaps, Type 3 fonts that submission systems reject).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.figure_notes import CROWD_WARNING, SIGN_WARNING, p_value_text
from core.methods import AUDIT_TEST
from metrics.names import header_lines
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
    """A p-value as :func:`core.figure_notes.p_value_text` writes it, in LaTeX text (``$<$ 0.0001``)."""
    return p_value_text(value).replace("<", "$<$")


@dataclass(frozen=True)
class Template:
    """A document class the bundle's ``main.tex`` is set in, and the page its floats are laid out for
    (points, as LaTeX reports ``\\columnwidth``, ``\\textwidth`` and ``\\textheight`` in it)."""

    name: str
    #: The ``\\documentclass`` line and what follows it in the preamble.
    preamble: tuple[str, ...]
    column: float
    text_width: float
    text_height: float
    two_columns: bool
    bibliography_style: str
    #: The title block's lines after ``\\title`` (the class's own author commands).
    authors: tuple[str, ...]


#: The templates of ``paper --template``: ``article`` (LaTeX's own, 11 pt; compiles with
#: Debian's recommended TeX Live and cm-super), ``acm`` (``acmart`` 1.88 ``sigconf``: 241 pt columns,
#: two of them 506 pt wide, 626 pt high) and ``lncs`` (``llncs`` 2.22: one 347 pt column, 549 pt high).
TEMPLATES: dict[str, Template] = {
    "article": Template(
        "article",
        (r"\documentclass[11pt]{article}",),
        column=360.0,
        text_width=360.0,
        text_height=541.4,
        two_columns=False,
        bibliography_style="plain",
        authors=(r"\author{}", r"\date{}"),
    ),
    "acm": Template(
        "acm",
        (
            # balance=false: the balance package acmart loads to even out the last page's columns
            # drops the floats' labels there (undefined references), as its manual warns. nonacm: a draft
            # for no venue yet, without acmart's placeholders ("Conference'17, July 2017, Washington, DC,
            # USA" in every running head, "ACM ISBN 978-x-xxxx-xxxx-x/YY/MM", a DOI of n's): the venue's
            # \acmConference and rights block are the authors' to add when they have them.
            r"\documentclass[sigconf,nonacm,balance=false]{acmart}",
            # No rights form yet: the block ACM's eform fills in later, left out of the draft.
            r"\setcopyright{none}",
            r"\settopmatter{printacmref=false}",
        ),
        column=241.1,
        text_width=506.3,
        text_height=626.0,
        two_columns=True,
        bibliography_style="ACM-Reference-Format",
        authors=(r"\author{Authors}", r"\affiliation{\institution{Institution}\country{Country}}"),
    ),
    "lncs": Template(
        "lncs",
        (r"\documentclass{llncs}",),
        column=347.1,
        text_width=347.1,
        text_height=549.1,
        two_columns=False,
        bibliography_style="splncs04",
        authors=(r"\author{Authors}", r"\institute{Institution}"),
    ),
}
#: The template of a bundle unless one is asked for: LaTeX's own class, which compiles without the
#: publishers' classes (``texlive-publishers``, ``texlive-latex-extra``).
DEFAULT_TEMPLATE = "article"


def template(name: str | Template | None) -> Template:
    """The :class:`Template` named ``name`` (default :data:`DEFAULT_TEMPLATE`); ValueError naming the choices."""
    if isinstance(name, Template):
        return name
    try:
        return TEMPLATES[name or DEFAULT_TEMPLATE]
    except KeyError:
        raise ValueError(f"unknown template {name!r}; choose one of {', '.join(TEMPLATES)}") from None


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


#: A name of at most this many characters is set whole (as a word of the text is); a longer one
#: gets break points (:func:`breakable`).
BREAK_CHARS = 12


def breakable(name: object) -> str:
    """A name in typewriter type that breaks where it must: after ``-``, ``_``, ``.``, ``/`` and at its
    spaces (set in the text's font, so they stretch as the line's others do: a typewriter space does
    not), and inside a long word with a hyphen, so no name runs past a column (``\\texttt`` alone
    never hyphenates)."""
    if len(str(name)) <= BREAK_CHARS:
        return rf"\texttt{{{escape(name)}}}"
    words = []
    for token in str(name).split():
        out = []
        for word in re.split(r"(?<=[-_./])", token):
            pieces = [word[i : i + 4] for i in range(0, len(word), 4)] if len(word) > 7 else [word]
            out.append(r"\discretionary{-}{}{}".join(escape(piece) for piece in pieces))
        words.append(r"\texttt{" + r"\allowbreak{}".join(out) + "}")
    return " ".join(words) or r"\texttt{}"


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
    """The runs (their indices) of each part of a table whose rows are measures and columns runs:
    as many runs side by side as fit ``width`` points after the label column, the rest in the next
    part; the ``baseline`` run (its index) first in every part, so each part reads against it."""

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


#: The mark of a figure whose range over the orders of ties holds 0 (:func:`core.figure_notes.figure_notes`).
SIGN_MARK = r"$\ddagger$"
#: The mark of a label-corrected figure whose interval the crowd check warns of (the same decision).
CROWD_MARK = r"$\S$"


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
    """The table's notes: the significance policy (test, family, correction; the mark stated only
    when a cell carries it, else that no run differs), the correlations' policy, the intervals, the
    ranges over the orders of ties and the sign warning (:func:`ties_notes`), how its exposure metrics
    are defined and the columns the report lacks."""
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
    """One table (:func:`metrics.tables.build_table`'s dict) as floats that fit the page of ``layout``
    (a :data:`TEMPLATES` name; default :data:`DEFAULT_TEMPLATE`) at :data:`TABLE_POINTS` type, never
    scaled: a row per measure (its label names the cutoff), a column per run, each cell the run's mean
    over the queries with its mark (``*`` against the baseline) and, under it, ± half the width of its
    bootstrap 95% interval; then, per correlated pair, Pearson's r and Kendall's τ of each run (``†``).
    In a column (``table``) if the runs fit it; on a two-column page across both (``table*``) if they
    fit that; else split by runs into parts (floats of their own), the baseline's column repeated
    in each. The notes state the test, family and correction of each mark a cell carries, and only
    of those."""
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


#: Defines ``\\Description`` where the class does not (ACM's ``acmart`` does; a no-op elsewhere), so a
#: figure's ``.tex`` goes into any paper as it is.
DESCRIPTION_GUARD = r"\providecommand{\Description}[2][]{}"


def figure_tex(
    file: str, caption: str, label: str, width: str | None = None, description: str = "", wide: bool = False
) -> str:
    """A ``figure`` float (``figure*`` across both columns if ``wide``) including ``file`` (a PDF of the
    bundle) at its natural size: the figures are drawn as wide as a column
    (:data:`metrics.plots.PAPER_WIDTH`) with their type at 7 pt or more and no taller than the text
    block, so neither scaling down (smaller type) nor up is needed; ``width`` overrides.
    ``description``: what the figure shows, for readers who cannot see it (ACM's ``\\Description``;
    :data:`DESCRIPTION_GUARD` makes it a no-op in other classes)."""
    option = f"[width={width}]" if width else ""
    environment = "figure*" if wide else "figure"
    return "\n".join(
        [
            DESCRIPTION_GUARD,
            rf"\begin{{{environment}}}[tbp]",
            r"\centering",
            rf"\includegraphics{option}{{{file}}}",
            rf"\Description{{{escape(description or caption)}}}",
            rf"\caption{{{escape(caption)}}}",
            rf"\label{{{label}}}",
            rf"\end{{{environment}}}",
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
    layout: str | Template | None = None,
) -> str:
    """A minimal paper in ``layout`` (a :data:`TEMPLATES` name; default :data:`DEFAULT_TEMPLATE`) that
    ``\\input``s ``methods.tex``, each table's and figure's ``.tex`` (names without the suffix) and the
    bibliography in the class's own style: the bundle compiles as it is (``pdflatex``, ``bibtex``,
    ``pdflatex`` twice). T1-encoded fonts (cm-super's Type 1 outlines)."""
    page = template(layout)
    lines = [
        *page.preamble,
        r"\usepackage[T1]{fontenc}",
        r"\usepackage[utf8]{inputenc}",
        r"\usepackage{amsmath}",
        r"\usepackage{booktabs}",
        r"\usepackage{graphicx}",
        DESCRIPTION_GUARD,
        # Run and set names in typewriter type break only at their separators: a line of several
        # may stretch its spaces a little more than TeX's default rather than run past the column.
        r"\setlength{\emergencystretch}{2em}",
        r"\begin{document}",
        rf"\title{{{escape(title)}}}",
        *page.authors,
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
    lines += [rf"\bibliographystyle{{{page.bibliography_style}}}", r"\bibliography{references}"]
    if checklist:  # after the references, as the venues place their checklists
        lines += [r"\appendix", r"\section*{Checklists}", r"\input{checklist}"]
    lines += [r"\end{document}", ""]
    return "\n".join(lines)


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
    """A report on a batch's labels at one cutoff (``rows``: its results there, as dicts with the
    fields of :data:`genderbias.ranking.defaults.LABEL_UNCERTAINTY_COLUMNS`), as the report page and
    :func:`metrics.formatting.uncertainty_table` show it: per metric and variant, each run's value with
    ± half its query-only 95% interval, the label-corrected value with ± half the interval that also
    carries the labels' uncertainty, and the labels' share of that width; against the baseline, the
    difference's two intervals and the combined test's p (``*``: p < ``alpha``), in tables of their
    own after the values'. A row with ``crowd_warning`` (:func:`core.figure_notes.figure_notes`) has
    its corrected value marked :data:`CROWD_MARK`, and the note says why. A column wide at :data:`TABLE_POINTS`; split by metric into parts that are
    each no taller than the text block of ``layout`` (:data:`TEMPLATES`), labelled ``tab:labels``,
    ``tab:labels-2``…. ``chosen``: which interval the corrected values got and why
    (:attr:`metrics.models.Report.label_interval`), said in the note; where they may not cover, none is
    printed (the corrected value alone, marked "may not cover")."""

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
        # Every part leaves room for its caption; those of the last section for the notes too
        # (they go under its last part).
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


def screenshot_description(page: dict) -> str:
    """What the task page's screenshot shows, from the page: its title and its instructions' first line."""
    lines = [line.strip() for line in str(page.get("instructions") or "").splitlines() if line.strip()]
    first = f' Its instructions begin: "{lines[0][:200]}"' if lines else ""
    return (
        f'Screenshot of the annotation task page titled "{page.get("title") or "untitled"}", with its '
        f"instructions ({len(lines)} lines) above the batch's first queries and their answer choices.{first}"
    )


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
        # File names and quoted queries cannot hyphenate: spaces stretch rather than a line overflow.
        r"\begingroup\sloppy",
    ]
    for venue in venues:
        lines += [
            rf"\paragraph{{{escape(SHORT_SOURCES[venue])}.}}",
            # Long quoted questions and answers with few break points: stretch spaces, never overflow.
            r"\begin{description}\sloppy",
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
                DESCRIPTION_GUARD,
                r"\begin{figure*}[tbp]",
                r"\centering",
                rf"\includegraphics[width={width}]{{{page['screenshot']}}}",
                rf"\Description{{{escape(screenshot_description(page))}}}",
                r"\caption{The task page as annotators saw it, with the batch's first queries.}",
                r"\label{fig:task-page}",
                r"\end{figure*}",
            ]
    lines.append(r"\par\endgroup")
    return "\n".join(lines) + "\n"

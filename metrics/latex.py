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

from collections.abc import Sequence

from core.p_values import p_value_text

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


def number(value: float | None, spec: str = ".4f", mark: str = "") -> str:
    """A table's figure in math mode with its mark as a superscript (``$0.1234^{*}$``); ``--`` for none.

    The digits are :func:`metrics.tables.table_text`'s (``.4f`` values, ``+.3f`` correlations)."""
    from .tables import number_text

    if value is None:
        return "--"
    sup = {"*": "^{*}", "†": r"^{\dagger}"}.get(mark, "")
    return f"${number_text(value, spec)}{sup}$"


def _p(value: float | None) -> str:
    if value is None:
        return ""
    text = p_value_text(value).replace("<", "$<$")
    return rf"{{\scriptsize $p$ {text}}}"


def table_label(table: dict) -> str:
    """The ``\\label`` of a table: ``tab:<layout>``."""
    return f"tab:{table['layout']}"


def table_notes(table: dict) -> list[str]:
    """The table's footnotes, as :func:`metrics.tables.table_text` states them: the significance
    policy (test, family, correction), the correlations' policy, how its exposure metrics are defined
    and the columns the report lacks."""
    notes = []
    policy = table.get("significance")
    if table.get("baseline") and policy:
        notes.append(
            rf"$^{{*}}$\,$p < {policy['alpha']}$ against \texttt{{{escape(policy['baseline'])}}}. "
            f"Test: {escape(policy['test'])}; family: {escape(policy['family'])}; "
            rf"correction: {escape(policy['correction'])} \cite{{holm1979}} ($p$ shown adjusted)."
        )
    if table["correlations"]:
        corr = table["correlation_significance"]
        notes.append(
            rf"$^{{\dagger}}$\,correlation with $p < {corr['alpha']}$: {escape(corr['test'])}; "
            f"family: {escape(corr['family'])}; {escape(corr['correction'])}-adjusted. "
            r"$r$: Pearson, $\tau$: Kendall's $\tau_b$ \cite{kendall1945}."
        )
    notes += [escape(definition) for definition in table.get("definitions", [])]
    if table["missing"]:
        notes.append(f"Not in this report: {escape(', '.join(table['missing']))}.")
    return notes


def table_tex(table: dict, caption: str | None = None) -> str:
    """One table (:func:`metrics.tables.build_table`'s dict) as a ``table`` float with a
    ``booktabs`` tabular: a row per run (values with ``*`` marks, then r and τ per correlated pair
    with ``†`` marks), a ``p`` row under a run compared with the baseline, and the footnotes. A
    table wider than the text is scaled down to it (``\\resizebox``), never up."""
    headers = [escape(column["label"]) for column in table["columns"]]
    # Each correlated pair heads its two columns (r, τ) in a row above the metrics' names.
    groups, rules = [""] * (1 + len(headers)), []
    for pair in table["correlations"]:
        start = len(headers) + 2
        groups.append(rf"\multicolumn{{2}}{{c}}{{{escape(pair['a'])} vs {escape(pair['b'])}}}")
        rules.append(rf"\cmidrule(lr){{{start}-{start + 1}}}")
        headers += ["$r$", r"$\tau$"]
    lines = [
        r"\begin{table}[tbp]",
        r"\centering",
        rf"\caption{{{escape(caption or table['title'])}; cutoff {table['cutoff']}.}}",
        rf"\label{{{table_label(table)}}}",
        r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%",
        r"\begin{tabular}{l" + "r" * len(headers) + "}",
        r"\toprule",
        *([" & ".join(groups) + r" \\", " ".join(rules)] if rules else []),
        " & ".join(["Run", *headers]) + r" \\",
        r"\midrule",
    ]
    for row in table["rows"]:
        cells = [number(cell["value"], ".4f", cell["mark"]) for cell in row["cells"]]
        for result in row["correlations"]:
            cells.append(number(result["pearson_r"], "+.3f", result["pearson_mark"]))
            cells.append(number(result["kendall_tau"], "+.3f", result["kendall_mark"]))
        lines.append(" & ".join([escape(row["run"]), *cells]) + r" \\")
        if any(cell["p_value"] is not None for cell in row["cells"]):
            ps = [_p(cell["p_value"]) for cell in row["cells"]]
            ps += [""] * (len(headers) - len(ps))
            lines.append(" & ".join(["", *ps]) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}%", "}"]
    notes = table_notes(table)
    if notes:
        lines += [r"\par\smallskip", r"\begin{minipage}{\linewidth}\footnotesize"]
        lines += [note + (r"\\" if i < len(notes) - 1 else "") for i, note in enumerate(notes)]
        lines.append(r"\end{minipage}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def figure_tex(file: str, caption: str, label: str, width: str = r"\linewidth") -> str:
    """A ``figure`` float including ``file`` (a PDF of the bundle) at ``width``."""
    return "\n".join(
        [
            r"\begin{figure}[tbp]",
            r"\centering",
            rf"\includegraphics[width={width}]{{{file}}}",
            rf"\caption{{{escape(caption)}}}",
            rf"\label{{{label}}}",
            r"\end{figure}",
            "",
        ]
    )


def document(title: str, tables: Sequence[str], figures: Sequence[str], intro: str = "") -> str:
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
    lines += [r"\bibliographystyle{plain}", r"\bibliography{references}", r"\end{document}", ""]
    return "\n".join(lines)


def _interval(low, high) -> str:
    return "--" if _missing(low) or _missing(high) else f"$[{low:.4f}, {high:.4f}]$"


def _missing(value) -> bool:
    return value is None or value != value  # None or NaN


def uncertainty_tex(rows: Sequence[dict], cutoff: int, baseline: str | None, alpha: float = 0.05) -> str:
    """A report on a batch's labels at one cutoff (``rows``: its results there, as dicts with the
    fields of :data:`metrics.defaults.LABEL_UNCERTAINTY_COLUMNS`), as the report page and
    :func:`metrics.formatting.uncertainty_table` show it: per metric and variant, each run's value with
    its query-only 95% interval, the label-corrected value with the interval that also carries the
    labels' uncertainty and the labels' share of its width; against the baseline, the difference's
    two intervals and the combined test's p (``*``: p < ``alpha``)."""

    from .formatting import p_mark

    def value(number_) -> str:
        return "--" if _missing(number_) else number(number_)

    headers = ["Run", "Value", "Query-only 95\\%", "Corrected", "With labels 95\\%", "Labels"]
    headers += ["$\\Delta$ query-only 95\\%", "$\\Delta$ with labels 95\\%", "$p$"]
    lines = [
        r"\begin{table}[tbp]",
        r"\centering",
        rf"\caption{{Values with the labels' uncertainty at cutoff {cutoff}"
        + (rf", against \texttt{{{escape(baseline)}}}" if baseline else "")
        + ".}",
        r"\label{tab:labels}",
        r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%",
        r"\begin{tabular}{l" + "r" * (len(headers) - 1) + "}",
        r"\toprule",
        " & ".join(headers) + r" \\",
    ]
    groups: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        groups.setdefault((row["metric"], row["variant"]), []).append(row)
    for (metric, variant), part in groups.items():
        lines += [
            r"\midrule",
            rf"\multicolumn{{{len(headers)}}}{{l}}{{\emph{{{escape(metric)} [{escape(variant)}] @{cutoff}}}}} \\",
        ]
        for row in part:
            p = row.get("p_value")
            mark = p_mark(None if _missing(p) else p, alpha)
            share = row.get("label_share")
            cells = [
                escape(row["run"]),
                value(row.get("value")),
                _interval(row.get("ci_low"), row.get("ci_high")),
                value(row.get("corrected")),
                _interval(row.get("combined_low"), row.get("combined_high")),
                "--" if _missing(share) else f"{share:.0%}".replace("%", r"\%"),
                _interval(row.get("difference_low"), row.get("difference_high")),
                _interval(row.get("difference_combined_low"), row.get("difference_combined_high")),
                "--" if _missing(p) else number(p, ".4f", mark),
            ]
            lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}%", "}"]
    lines += [
        r"\par\smallskip",
        r"\begin{minipage}{\linewidth}\footnotesize",
        "Corrected: the mean over the truly non-gendered queries, estimated from every judged query's label "
        "probabilities; its interval resamples the queries and re-fits the labels' class means. Labels: the "
        "share of that interval's width the labels contribute."
        + (
            rf" $^{{*}}$\,$p < {alpha}$: bootstrap test of the label-corrected paired difference, "
            r"Holm-adjusted \cite{holm1979} within each metric, variant and cutoff."
            if baseline
            else ""
        ),
        r"\end{minipage}",
        r"\end{table}",
    ]
    return "\n".join(lines) + "\n"

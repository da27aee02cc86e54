"""The bundle's LaTeX: the templates its ``main.tex`` is set in, figure floats, the checklist, and :func:`escape`,
through which every text from the platform goes (the tables: :mod:`publishing.latex_tables`). Pure. Only what
Debian's ``texlive-latex-base``/``-recommended`` hold is used, but for the venues' own classes (``texlive-publishers``);
T1 fonts from ``cm-super``, since pdflatex would otherwise draw Type 3 bitmaps, which submission systems reject.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from core.figure_notes import p_value_text
from publishing.checklist_questions import SHORT_SOURCES, SOURCES, TO_ANSWER
from publishing.screenshot import PRINT_POINTS_PER_PIXEL, WINDOW

#: LaTeX's special characters and the Unicode signs the platform's texts use, as ``latex_escapes.toml`` beside this
#: module maps them to text-mode LaTeX.
_ESCAPES = tomllib.loads(Path(__file__).with_name("latex_escapes.toml").read_text(encoding="utf-8"))
_SPECIAL, _UNICODE = _ESCAPES["special"], _ESCAPES["unicode"]


#: The accented letters of Latin-1 that LaTeX's default (OT1) fonts compose (not Ð, Þ, ð, þ).
_LATIN = frozenset(chr(c) for c in range(0xC0, 0x100)) - set("×÷ÐÞðþ")


def escape(text: object) -> str:
    """``text`` safe in LaTeX's text mode: the specials escaped, the Unicode signs the texts use as commands,
    accented Latin letters kept and any other character ``?``, so a name never breaks a compile."""
    out = []
    for char in str(text):
        if escaped := _SPECIAL.get(char) or _UNICODE.get(char):
            out.append(escaped)
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


#: The templates of ``paper --template``, as ``latex_templates.toml`` beside this module declares them: ``article``
#: (LaTeX's own), ``acm`` (``acmart`` ``sigconf``) and ``lncs`` (``llncs``).
TEMPLATES: dict[str, Template] = {
    name: Template(name, **{key: tuple(value) if isinstance(value, list) else value for key, value in fields.items()})
    for name, fields in tomllib.loads(
        Path(__file__).with_name("latex_templates.toml").read_text(encoding="utf-8")
    ).items()
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


#: A name of at most this many characters is set whole (as a word of the text is); a longer one
#: gets break points (:func:`breakable`).
BREAK_CHARS = 12


def breakable(name: object) -> str:
    """A name in typewriter type that breaks where it must (``\\texttt`` alone never hyphenates): after ``-``,
    ``_``, ``.``, ``/``, at its spaces (in the text's font, so they stretch), and inside a long word with a hyphen."""
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


#: Defines ``\\Description`` where the class does not (ACM's ``acmart`` does; a no-op elsewhere), so a
#: figure's ``.tex`` goes into any paper as it is.
DESCRIPTION_GUARD = r"\providecommand{\Description}[2][]{}"


def figure_tex(
    file: str, caption: str, label: str, width: str | None = None, description: str = "", wide: bool = False
) -> str:
    """A ``figure`` float (``figure*`` across both columns if ``wide``) including ``file`` at its natural size (the
    figures are drawn at a column's width, so no scaling changes their type size) unless ``width`` is given;
    ``description``: what it shows, for readers who cannot see it (ACM's ``\\Description``)."""
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
    """A minimal paper in ``layout`` that ``\\input``s ``methods.tex``, each table's and figure's ``.tex`` and the
    bibliography in the class's own style: the bundle compiles as it is (``pdflatex``, ``bibtex``, ``pdflatex`` ×2)."""
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


def screenshot_description(page: dict) -> str:
    """What the task page's screenshot shows, from the page: its title and its instructions' first line."""
    lines = [line.strip() for line in str(page.get("instructions") or "").splitlines() if line.strip()]
    first = f' Its instructions begin: "{lines[0][:200]}"' if lines else ""
    return (
        f'Screenshot of the annotation task page titled "{page.get("title") or "untitled"}", with its '
        f"instructions ({len(lines)} lines) above the batch's first queries and their answer choices.{first}"
    )


def checklist_tex(items: Sequence, page: dict | None) -> str:
    """``checklist.tex``: the venues' questions with their answers from the records, the instructions as the task
    page showed them and its screenshot when taken; what only the authors can answer is in bold, to be found."""
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
            caption = "The task page as annotators saw it, with the batch's first queries."
            width = f"{WINDOW[0] * PRINT_POINTS_PER_PIXEL:.0f}pt"
            shot = figure_tex(page["screenshot"], caption, "fig:task-page", width, screenshot_description(page), True)
            lines.append(shot.rstrip("\n"))
    lines.append(r"\par\endgroup")
    return "\n".join(lines) + "\n"

"""The paper bundle as a reviewer reads it: compiled in a one-column and a two-column page, every
page rendered (pdftoppm), every table's and figure's type at 7 pt or more at its placed size, and
nothing wider than the text (no Overfull \\hbox beyond 1 pt).

Neither ``acmart`` (ACM sigconf) nor ``llncs`` (Springer LNCS) is in Debian's recommended TeX Live,
so their text blocks are emulated with ``geometry``: LNCS 122 mm × 193 mm in one column, sigconf
506 pt wide and 626 pt high in two columns 24 pt apart (a column of 241 pt), as acmart 1.88 sets them.
``test_paper_templates.py`` compiles the bundle in the real classes. Type sizes come from ``pdftotext -bbox``:
a word's box is its font's ascent plus descent, 0.885 of the size for Computer Modern (7 pt: 6.19 pt
high, measured), more for the figures' DejaVu Sans, so a box under 6.1 pt high is type under 7 pt."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.core.management import call_command

from metrics.models import Report
from publishing.services.paper import write_paper_bundle

QRELS = "1 0 d1 2\n1 0 d3 0\n2 0 d4 1\n3 0 d2 1\n"
TEMPLATES = {
    "lncs-onecolumn": r"\documentclass[10pt]{article}\usepackage[textwidth=122mm,textheight=193mm]{geometry}",
    "sigconf-twocolumn": r"\documentclass[10pt,twocolumn]{article}"
    r"\usepackage[textwidth=506.3pt,textheight=626pt,columnsep=24pt]{geometry}",
}
#: A report id as long as the demo's: it must not run past a column in the text.
NAME = "demo-non-gendered-ranker-a-ranker-b-ranker-c"
#: Smallest word box (points) of 7 pt type (Computer Modern: 6.19; see the module docstring).
MIN_BOX = 6.1
#: Overfull boxes up to this much are LaTeX's rounding, not a table past the margin.
OVERFULL_TOLERANCE = 1.0

needs_tools = pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in ("pdflatex", "pdftoppm", "pdftotext", "pdffonts")),
    reason="needs pdflatex and poppler-utils (pdftoppm, pdftotext, pdffonts)",
)


def _latex(folder: Path, name: str) -> str:
    result = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", name],
        cwd=folder, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:]
    return (folder / name.replace(".tex", ".log")).read_text(errors="replace")


def overfull(log: str) -> list[float]:
    """The widths (points) by which boxes overflow, from a LaTeX log."""
    return [float(width) for width in re.findall(r"Overfull \\hbox \((\d+(?:\.\d+)?)pt too wide\)", log)]


def word_boxes(pdf: Path) -> list[tuple[int, str, float]]:
    """(page, word, box height) of every word of ``pdf`` (``pdftotext -bbox``)."""
    html = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    words, page = [], 0
    for line in html.splitlines():
        if "<page " in line:
            page += 1
        match = re.search(r'yMin="([\d.]+)" xMax="[\d.]+" yMax="([\d.]+)">([^<]*)</word>', line)
        if match:
            words.append((page, match.group(3), float(match.group(2)) - float(match.group(1))))
    return words


def pages_document(preamble: str, folder: Path) -> str:
    """Each table and figure of the bundle on a page of its own, nothing else on it."""
    parts = sorted(p.stem for p in folder.glob("table-*.tex")) + sorted(p.stem for p in folder.glob("fig-*.tex"))
    body = "\n".join(rf"\input{{{name}}}\clearpage" for name in parts)
    return "\n".join(
        [preamble, r"\usepackage[utf8]{inputenc}\usepackage{amsmath,booktabs,graphicx}", r"\pagestyle{empty}",
         r"\begin{document}", body, r"\end{document}", ""]
    )  # fmt: skip


@needs_tools
@pytest.mark.slow
@pytest.mark.django_db
def test_every_table_and_figure_reads_at_print_size_in_both_templates(world, tmp_path):
    (world / "qrels.txt").write_text(QRELS)
    call_command("import_qrels", str(world / "qrels.txt"), name="judged", queries="q", collection="tiny", verbosity=0)
    call_command(
        "bias_report", queries="q", runs="a,b,c", cutoffs="1,2,3", qrels="judged", measures="MRR@2,nDCG@2,R@2",
        bootstrap=20, baseline="a", name=NAME, verbosity=0, stdout=io.StringIO(),
    )  # fmt: skip
    folder = write_paper_bundle(Report.objects.get(name=NAME), tmp_path / "bundle")
    main = (folder / "main.tex").read_text()
    for template, preamble in TEMPLATES.items():
        # The whole document in the template: compiles, nothing overflows.
        (folder / f"main-{template}.tex").write_text(main.replace(r"\documentclass[11pt]{article}", preamble))
        log = _latex(folder, f"main-{template}.tex")
        assert [w for w in overfull(log) if w > OVERFULL_TOLERANCE] == [], (template, overfull(log))
        # Each table and figure alone on a page: rendered, every word 7 pt or more.
        (folder / f"pages-{template}.tex").write_text(pages_document(preamble, folder))
        log = _latex(folder, f"pages-{template}.tex")
        assert [w for w in overfull(log) if w > OVERFULL_TOLERANCE] == [], (template, overfull(log))
        pdf = folder / f"pages-{template}.pdf"
        pages = int(re.search(r"Output written on .*?\((\d+) pages?", log.replace("\n", "")).group(1))
        subprocess.run(["pdftoppm", "-r", "30", "-png", str(pdf), str(tmp_path / template)], check=True, timeout=120)
        assert len(list(tmp_path.glob(f"{template}-*.png"))) == pages >= 4
        words = word_boxes(pdf)
        assert len({page for page, _, _ in words}) == pages  # every page has text (a table or a figure's)
        # No bitmap (Type 3 without a name) font from TeX: a TS1 glyph such as text-mode \dag would be one.
        fonts = subprocess.run(["pdffonts", str(pdf)], capture_output=True, text=True, check=True).stdout
        assert not [line for line in fonts.splitlines() if line.startswith("[none]")], fonts
        small = [(page, word, round(height, 2)) for page, word, height in words if height < MIN_BOX]
        assert small == [], (template, small[:20])
    assert "resizebox" not in "".join(p.read_text() for p in folder.glob("table-*.tex"))
    assert "width=" not in "".join(p.read_text() for p in folder.glob("fig-*.tex"))  # natural size


def test_overfull_and_word_boxes_read_what_latex_and_poppler_write(tmp_path):
    """The helpers can fail: an overflowing line is found and 6 pt type is caught."""
    assert overfull("Overfull \\hbox (12.5pt too wide) in paragraph at lines 3--4\n") == [12.5]
    if shutil.which("pdflatex") is None or shutil.which("pdftotext") is None:
        pytest.skip("needs pdflatex and pdftotext")
    (tmp_path / "t.tex").write_text(
        "\\documentclass{article}\\pagestyle{empty}\\begin{document}"
        "{\\fontsize{6}{7}\\selectfont small}\\par{\\fontsize{7}{8}\\selectfont seven}\\end{document}\n"
    )
    _latex(tmp_path, "t.tex")
    heights = {word: height for _, word, height in word_boxes(tmp_path / "t.pdf")}
    assert heights["small"] < MIN_BOX <= heights["seven"]


def _many_runs_table(runs: int) -> dict:
    """A hand-made SIGIR 2020 table: ``runs`` runs with long names, three measures, intervals and marks."""
    columns = [
        {"label": f"RaB[tf]@{k}", "metric": "RaB", "variant": "tf", "cutoff": k} for k in (5, 10, 20)
    ]  # fmt: skip
    cell = {"value": -0.12345, "ci_low": -0.2, "ci_high": -0.05, "mark": "*", "p_value": 0.01}
    return {
        "layout": "sigir2020",
        "title": "Rank bias",
        "baseline": "run-0",
        "significance": {"test": "t", "family": "f", "correction": "Holm", "alpha": 0.05, "baseline": "run-0"},
        "correlations": [],
        "correlation_significance": None,
        "columns": columns,
        "missing": [],
        "rows": [
            {"run": f"bm25-monot5-{i}-reranked-long-name", "cells": [dict(cell) for _ in columns], "correlations": []}
            for i in range(runs)
        ],
    }


def test_runs_that_do_not_fit_a_column_go_to_a_second_part():
    from publishing.latex_tables import table_tex

    tex = table_tex(_many_runs_table(9))
    parts = tex.count(r"\begin{table}")
    assert parts >= 2 and r"\label{tab:sigir2020}" in tex and r"\label{tab:sigir2020-2}" in tex
    assert "runs 1--" in tex and "notes under the last part" in tex
    assert tex.count("Holm") == 1 and tex.rindex("Holm") > tex.rindex(r"\begin{table}")  # notes once, at the end
    assert "resizebox" not in tex
    # Every run is in exactly one part.
    assert sum(tex.count(f"monot5-{i}-") for i in range(9)) == 9


@needs_tools
def test_a_split_table_fits_a_two_column_page(tmp_path):
    from publishing.latex_tables import table_tex

    # Laid out for ACM's page (across both columns, or split with the baseline in each part).
    (tmp_path / "table-many.tex").write_text(table_tex(_many_runs_table(9), layout="acm"))
    (tmp_path / "pages.tex").write_text(pages_document(TEMPLATES["sigconf-twocolumn"], tmp_path))
    log = _latex(tmp_path, "pages.tex")
    assert [w for w in overfull(log) if w > OVERFULL_TOLERANCE] == [], overfull(log)
    assert [(w, round(h, 2)) for _, w, h in word_boxes(tmp_path / "pages.pdf") if h < MIN_BOX] == []

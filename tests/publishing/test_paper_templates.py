"""The paper bundle in the venues' real classes (Debian's ``texlive-publishers``: ACM's ``acmart``
``sigconf``, two columns; Springer's ``llncs``, one column; with ``texlive-latex-extra``,
``texlive-plain-generic`` and ``cm-super``) and LaTeX's ``article``, as a reviewer reads the PDF: a
bundle of the demo's shape (3 runs with the demo's long report name, a report on a batch's labels
with its uncertainty table) and a 7-run bundle over the 3,750 annotated MS MARCO queries of the
reference data (runs synthetic, long names such as ``MatchPyra / mid``), each compiled once per
template (pdflatex, bibtex, pdflatex twice, as README.txt says). Read from the log and the PDF:

- no overfull box over 1 pt (``Overfull \\hbox``/``\\vbox`` in the log), no ``Float too large``;
- no glyph off the page (``pdftotext -bbox``: every word's box inside its page's);
- no Type 3 font (``pdffonts``): figures embed TrueType (``pdf.fonttype`` 42), the text cm-super's Type 1;
- each table and figure alone on a page in the template's class: every word 7 pt or more
  (:data:`tests.publishing.test_paper_pages.MIN_BOX`);
- every figure with a ``\\Description`` written from its data; the labels' difference rows in the PDF."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from django.core.management import call_command

from metrics import selectors
from metrics.models import Report
from metrics.names import header_lines
from publishing.latex import DESCRIPTION_GUARD, TEMPLATES, breakable
from publishing.latex_tables import HEADER_CHARS
from publishing.services.paper import write_paper_bundle

from .test_paper_pages import MIN_BOX, OVERFULL_TOLERANCE, QRELS, word_boxes

NAME = "demo-non-gendered-ranker-a-ranker-b-ranker-c"
#: The 7 runs of the large bundle: the baseline ``a`` and names as long and odd as real ones.
RUNS = ("a", "MatchPyra / mid", "bm25-monot5-reranked-top100", "KNRM", "ColBERTv2.PLAID", "dpr_msmarco", "BERT / base")

needs_classes = pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in ("pdflatex", "bibtex", "pdftotext", "pdffonts"))
    or subprocess.run(["kpsewhich", "acmart.cls", "llncs.cls", "xstring.sty", "t1cmr.fd"], capture_output=True,
                      text=True).stdout.count("\n") < 4,
    reason="needs pdflatex, poppler-utils and Debian's texlive-publishers texlive-latex-extra texlive-plain-generic "
    "cm-super (bin/test installs them)",
)  # fmt: skip


def compile_bundle(folder: Path) -> str:
    """pdflatex, bibtex, pdflatex twice (README.txt's commands); the final log."""
    run = {"cwd": folder, "capture_output": True, "text": True, "timeout": 300}
    latex = ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "main.tex"]
    for command in (latex, ["bibtex", "main"], latex, latex):
        done = subprocess.run(command, **run)
        assert done.returncode == 0, (folder.name, command[0], done.stdout[-3000:])
    return (folder / "main.log").read_text(errors="replace")


def overflows(log: str) -> list[float]:
    """Every overfull box's excess (points), horizontal or vertical, from a LaTeX log."""
    return [float(w) for w in re.findall(r"Overfull \\[hv]box \((\d+(?:\.\d+)?)pt too (?:wide|high)\)", log)]


def off_page(pdf: Path) -> list[tuple[int, str]]:
    """(page, word) of every word whose box is not inside its page (``pdftotext -bbox``)."""
    html = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    out, page, width, height = [], 0, 0.0, 0.0
    for line in html.splitlines():
        if match := re.search(r'<page width="([\d.]+)" height="([\d.]+)"', line):
            page, width, height = page + 1, float(match.group(1)), float(match.group(2))
        elif match := re.search(
            r'xMin="([-\d.]+)" yMin="([-\d.]+)" xMax="([-\d.]+)" yMax="([-\d.]+)">([^<]*)</word>', line
        ):
            x0, y0, x1, y1 = map(float, match.groups()[:4])
            if x0 < 0 or y0 < 0 or x1 > width or y1 > height:
                out.append((page, match.group(5)))
    return out


def overlapping(pdf: Path, tolerance: float = 0.5) -> list[tuple[str, str]]:
    """Pairs of words on a page of ``pdf`` whose boxes overlap by more than ``tolerance`` points both ways."""
    html = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    pages: list[list[tuple[float, float, float, float, str]]] = []
    for line in html.splitlines():
        if "<page " in line:
            pages.append([])
        elif match := re.search(
            r'xMin="([-\d.]+)" yMin="([-\d.]+)" xMax="([-\d.]+)" yMax="([-\d.]+)">([^<]*)</word>', line
        ):
            pages[-1].append((*map(float, match.groups()[:4]), match.group(5)))
    return [
        (a[4], b[4])
        for words in pages
        for i, a in enumerate(words)
        for b in words[i + 1 :]
        if min(a[2], b[2]) - max(a[0], b[0]) > tolerance and min(a[3], b[3]) - max(a[1], b[1]) > tolerance
    ]


def type3_fonts(pdf: Path) -> list[str]:
    fonts = subprocess.run(["pdffonts", str(pdf)], capture_output=True, text=True, check=True).stdout
    return [line for line in fonts.splitlines() if "Type 3" in line]


def floats_document(template: str, folder: Path) -> str:
    """Each table and figure of the bundle alone on a page of the template's own class."""
    parts = sorted(p.stem for p in folder.glob("table-*.tex")) + sorted(p.stem for p in folder.glob("fig-*.tex"))
    body = "\n".join(rf"\input{{{name}}}\clearpage" for name in parts)
    return "\n".join(
        [*TEMPLATES[template].preamble, r"\usepackage[T1]{fontenc}\usepackage[utf8]{inputenc}",
         r"\usepackage{amsmath,booktabs,graphicx}", DESCRIPTION_GUARD, r"\title{Floats}",
         r"\begin{document}", r"\pagestyle{empty}\pagenumbering{gobble}", body, r"\end{document}", ""]
    )  # fmt: skip


def check_bundle(report: Report, out: Path) -> dict[str, dict]:
    """The bundle in each template, compiled and read; what was measured, by template."""
    measured, figures_read = {}, set()
    for template in TEMPLATES:
        folder = write_paper_bundle(report, out / template, template=template)
        main = (folder / "main.tex").read_text()
        assert TEMPLATES[template].preamble[0] in main
        log = compile_bundle(folder)
        pdf = folder / "main.pdf"
        assert "Float too large" not in log and "undefined" not in log.lower(), (template, log[-2000:])
        too_wide = [w for w in overflows(log) if w > OVERFULL_TOLERANCE]
        assert too_wide == [], (template, too_wide)
        assert off_page(pdf) == [], (template, off_page(pdf)[:20])
        assert type3_fonts(pdf) == [], (template, type3_fonts(pdf))
        for figure in folder.glob("fig-*.pdf"):
            if (figure.name, figure.read_bytes()) in figures_read:
                continue  # the same figure in another template's bundle (figures do not depend on it): read already
            figures_read.add((figure.name, figure.read_bytes()))
            assert type3_fonts(figure) == [], figure.name
            # Nothing cut at the figure's edge (a title, a name), no two words drawn over each other.
            assert off_page(figure) == [], (figure.name, off_page(figure))
            assert overlapping(figure) == [], (figure.name, overlapping(figure)[:10])
        # Every figure says what it shows: its \Description names the data's runs.
        for tex in folder.glob("fig-*.tex"):
            description = re.search(r"\\Description\{(.+)\}", tex.read_text()).group(1)
            assert len(description) > 80 and "run" in description, (tex.name, description)
        # Each float alone on a page of the class: compiles without overflow, every word 7 pt or more.
        (folder / "floats.tex").write_text(floats_document(template, folder))
        done = subprocess.run(
            ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "floats.tex"],
            cwd=folder, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:]
        floats_log = (folder / "floats.log").read_text(errors="replace")
        assert [w for w in overflows(floats_log) if w > OVERFULL_TOLERANCE] == [], (template, overflows(floats_log))
        assert "Float too large" not in floats_log, template
        words = word_boxes(folder / "floats.pdf")
        small = [(page, word, round(h, 2)) for page, word, h in words if h < MIN_BOX]
        assert small == [], (template, small[:20])
        text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
        measured[template] = {"text": text, "folder": folder, "min_box": min(h for _, _, h in words)}
    return measured


@needs_classes
@pytest.mark.slow
@pytest.mark.django_db
def test_the_demo_shaped_bundle_fits_every_template(batch, world, tmp_path, figures_once):
    (world / "qrels.txt").write_text(QRELS)
    call_command("import_qrels", str(world / "qrels.txt"), name="judged", queries="q", collection="tiny", verbosity=0)
    call_command(
        "bias_report", from_batch=batch.name, runs="a,b,c", cutoffs="1,2,3", bootstrap=20, baseline="a",
        qrels="judged", measures="MRR@2,nDCG@2,R@2", name=NAME, verbosity=0, stdout=io.StringIO(),
    )  # fmt: skip
    measured = check_bundle(Report.objects.get(name=NAME), tmp_path)
    for template, found in measured.items():
        # Effectiveness beside bias: the trade-off figure too (its runs named in the legend, not by the points).
        assert (found["folder"] / "fig-tradeoff.pdf").exists(), template
        # The labels' table and its rows against the baseline are in the PDF.
        assert "Values with the labels" in found["text"] and "difference from the baseline" in found["text"], template


def _seven_runs(report: Report, qids: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The report's summary and per-query frames for :data:`RUNS` over ``qids``: every metric key of the
    report, values normal (seed 0), each summary row the mean of its per-query values, the labels'
    columns beside it."""
    keys = selectors.report_summary(report)
    template = keys[keys["run"] == "a"]
    rng = np.random.default_rng(0)
    drawn = {
        (run, *k): rng.normal(0.1 + 0.01 * r, 0.3, len(qids))
        for k in template[["metric", "variant", "cutoff"]].itertuples(index=False)
        for r, run in enumerate(RUNS)
    }
    per_query = pd.concat(
        [pd.DataFrame({"run": run, "qid": qids, "metric": metric, "variant": variant, "cutoff": cutoff, "value": values})
         for (run, metric, variant, cutoff), values in drawn.items()],
        ignore_index=True,
    )  # fmt: skip
    rows = []
    for run in RUNS:
        for row in template.to_dict("records"):
            values = drawn[(run, row["metric"], row["variant"], row["cutoff"])]  # the rows' own values, not a filter
            mean = float(values.mean())
            row = dict(row, run=run, value=mean, queries=len(values), ci_low=mean - 0.01, ci_high=mean + 0.01)
            row |= {"corrected": mean + 0.002, "combined_low": mean - 0.02, "combined_high": mean + 0.02}
            row |= {"label_share": 0.4, "difference_low": -0.01, "difference_high": 0.02}
            row |= {"difference_combined_low": -0.03, "difference_combined_high": 0.04, "p_value": 0.2}
            rows.append(row)
    return pd.DataFrame(rows, columns=list(template.columns)), per_query


@needs_classes
@pytest.mark.slow
@pytest.mark.django_db
def test_a_seven_run_study_of_3750_queries_fits_every_template(
    batch, world, tmp_path, monkeypatch, figures_once, reference_dir
):
    reference = reference_dir / "queries_gender_annotated.csv"  # skips without the reference data, as the others do
    qids = [line.split(",", 1)[0] for line in reference.read_text().splitlines() if line.strip()]
    assert len(qids) == 3750
    (world / "qrels.txt").write_text(QRELS)
    call_command("import_qrels", str(world / "qrels.txt"), name="judged", queries="q", collection="tiny", verbosity=0)
    call_command(
        "bias_report", from_batch=batch.name, runs="a,b,c", cutoffs="5,10,20", bootstrap=20, baseline="a",
        qrels="judged", measures="MRR@10,nDCG@10", name="seven", verbosity=0, stdout=io.StringIO(),
    )  # fmt: skip
    report = Report.objects.get(name="seven")
    summary, per_query = _seven_runs(report, qids)
    monkeypatch.setattr(selectors, "report_summary", lambda _report: summary)
    monkeypatch.setattr(selectors, "report_per_query", lambda _report: per_query)
    report.run_order = list(RUNS)
    measured = check_bundle(report, tmp_path)
    for template, found in measured.items():
        text = found["text"]
        assert "Values with the labels" in text and "difference from the baseline" in text, template
        # Every run of every split table beside the baseline, and "MatchPyra / mid" broken at its slash.
        for tex in found["folder"].glob("table-*.tex"):
            body = tex.read_text()
            if tex.name != "table-labels.tex" and "part 2 of" in body:
                for part in body.split(r"\end{table")[:-1]:
                    # The baseline's column first in every part.
                    assert "beside the baseline" in part and "\\toprule\n & a & " in part, (tex.name, part[:400])
        assert "MatchPyra /" in text, template
        figures = sorted(p.name for p in found["folder"].glob("fig-distribution*.pdf"))
        assert len(figures) >= 2, (template, figures)  # 7 runs' boxes do not fit one text block
        assert (found["folder"] / "fig-tradeoff.pdf").exists(), template


def test_long_names_break_with_a_hyphen_or_at_a_separator():
    assert header_lines("MatchPyra / mid", HEADER_CHARS) == ["MatchPyra", "/ mid"]
    assert all(len(line) <= 9 for line in header_lines("bm25monot5rerankedtop100", HEADER_CHARS))
    assert all(line.endswith("-") for line in header_lines("bm25monot5rerankedtop100", HEADER_CHARS)[:-1])
    assert (
        "".join(line.rstrip("-") for line in header_lines("bm25monot5rerankedtop100", HEADER_CHARS))
        == "bm25monot5rerankedtop100"
    )
    assert r"\discretionary{-}{}{}" in breakable("bm25monot5rerankedtop100") and r"\allowbreak" in breakable(
        "ranker-a-ranker-b"
    )
    assert breakable("bert_base") == r"\texttt{bert\_base}"  # a short name is set whole, as a word is


@pytest.mark.slow
@pytest.mark.django_db
def test_the_page_and_the_api_build_the_bundle_in_the_template_asked(
    world, client, django_user_model, django_capture_on_commit_callbacks, figures_once
):
    """``?template=`` on the page's download (its form) and the API's: each template its own job and zip
    (main.tex in that class); an unknown template is a 400 naming the choices, never a job."""
    import zipfile

    from core.models import Job

    call_command("bias_report", queries="q", runs="a,c", cutoffs="1,2", bootstrap=20, name="tpl", verbosity=0)
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    page = client.get("/metrics/tpl/").content.decode()
    assert 'name="template"' in page and 'value="acm"' in page and 'value="lncs"' in page
    bad = client.get("/api/metrics/reports/tpl/paper/?template=ieee")
    assert bad.status_code == 400 and "acm" in bad.json()["template"][0]
    assert client.get("/metrics/tpl/paper.zip?template=ieee").status_code == 400
    assert not Job.objects.exists()
    for template, line in (("acm", r"{acmart}"), ("lncs", r"{llncs}"), (None, r"[11pt]{article}")):
        query = f"?template={template}" if template else ""
        with django_capture_on_commit_callbacks(execute=True):
            started = client.get(f"/api/metrics/reports/tpl/paper/{query}")
        assert started.status_code == 202, template
        job = Job.objects.get(pk=started.json()["id"])
        assert job.status == Job.Status.DONE and job.result["url"] == f"/metrics/tpl/paper.zip{query}"
        response = client.get(job.result["url"])
        assert response.status_code == 200, template
        suffix = f"-{template}" if template else ""
        assert f'filename="tpl-paper{suffix}.zip"' in response["Content-Disposition"]
        archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
        assert line in archive.read("tpl-paper/main.tex").decode(), template
    assert Job.objects.filter(kind="metrics.paper").count() == 3


@pytest.mark.skipif(shutil.which("pdftotext") is None or shutil.which("pdffonts") is None, reason="needs poppler-utils")
def test_the_pdf_readers_find_cut_overlapping_and_type3_text(tmp_path):
    """The checks can fail: a title past the figure's edge, two labels drawn over each other and
    matplotlib's default Type 3 fonts are found; the paper's own saving embeds TrueType."""
    from matplotlib.backends.backend_pdf import FigureCanvasPdf
    from matplotlib.figure import Figure

    from metrics.plots import _pdf

    figure = Figure(figsize=(2, 1))
    axes = figure.add_subplot()
    axes.text(0.2, 0.5, "overlapping", transform=axes.transAxes)
    axes.text(0.25, 0.5, "labels", transform=axes.transAxes)
    axes.set_title("a title far too long for a figure two inches wide")
    FigureCanvasPdf(figure)
    figure.savefig(tmp_path / "default.pdf")  # matplotlib's default: Type 3
    (tmp_path / "paper.pdf").write_bytes(_pdf(figure))
    assert type3_fonts(tmp_path / "default.pdf") and not type3_fonts(tmp_path / "paper.pdf")
    assert ("overlapping", "labels") in overlapping(tmp_path / "paper.pdf")
    assert off_page(tmp_path / "paper.pdf")  # the title runs past both edges

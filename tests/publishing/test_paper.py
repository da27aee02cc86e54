"""The paper bundle (``manage.py paper``, the report page's zip, ``/api/metrics/reports/<name>/paper/``):
LaTeX tables whose cells are the report's tables', a methods paragraph from the study's facts, a
bibliography of exactly what the text cites, and a document that compiles with pdflatex."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotation import selectors as annotation_selectors
from annotation.exports.services import export_queries
from genderbias.ranking.defaults import TABLE_LAYOUTS
from metrics import selectors, tables
from metrics.models import Report
from publishing.bibliography import ENTRIES, bibtex, cited_keys
from publishing.latex import escape
from publishing.latex_tables import table_tex
from publishing.services.paper import paper_files, write_paper_bundle

QRELS = "1 0 d1 2\n1 0 d3 0\n2 0 d4 1\n3 0 d2 1\n"
BIB_KEY = re.compile(r"^@\w+\{([^,]+),", re.MULTILINE)


@pytest.fixture
def judged(world):
    path = world / "qrels.txt"
    path.write_text(QRELS)
    call_command("import_qrels", str(path), name="judged", queries="q", collection="tiny", verbosity=0)


def build(name="tab", **extra) -> Report:
    options = {"queries": "q", "runs": "a,c", "cutoffs": "1,2", "qrels": "judged", "measures": "MRR@2,nDCG@2,R@2"}
    options |= extra
    call_command("bias_report", **options, bootstrap=20, name=name, verbosity=0, stdout=io.StringIO())
    return Report.objects.get(name=name)


def _latex_cell(cell: str) -> str:
    """A LaTeX table cell in ``table_text``'s notation: ``$0.1234$*`` → ``0.1234*``, ``$+0.500$$\\dagger$`` →
    ``+0.500†``, ``--`` → ``–``."""
    cell = cell.strip()
    if cell == "--":
        return "–"
    match = re.fullmatch(r"\$([+-]?\d+\.\d+)\$(\*|\$\\dagger\$)?", cell)
    assert match, cell
    return match.group(1) + {"*": "*", "$\\dagger$": "†"}.get(match.group(2) or "", "")


def _latex_rows(tex: str) -> dict[str, list[str]]:
    """Run → its cells, from a table's ``.tex`` (a row per measure, a column per run, the parts
    side by side): the values of each run's column, top to bottom."""
    rows: dict[str, list[str]] = {}
    for part in tex.split("\\begin{table}")[1:]:
        head, body = part.split("\\toprule\n", 1)[1].split("\\midrule\n", 1)
        runs = [re.sub(r"\\begin\{tabular\}\[b\]\{@\{\}c@\{\}\}|\\end\{tabular\}|\\\\", "", c).strip()
                for c in re.split(r"(?<!\\)&", head.strip().removesuffix("\\\\"))[1:]]  # fmt: skip
        body = body.split("\\bottomrule", 1)[0]
        for line in body.strip().splitlines():
            cells = [c.strip() for c in re.split(r"(?<!\\)&", line.strip().split("\\\\")[0])]
            if len(cells) == len(runs) + 1 and cells[0]:  # a measure's row (an interval row has no label)
                for run, cell in zip(runs, cells[1:], strict=True):
                    rows.setdefault(run.replace("\\_", "_"), []).append(_latex_cell(cell))
    return rows


def _text_rows(text: str, runs: list[str]) -> dict[str, list[str]]:
    """Run → its cells, from :func:`metrics.tables.table_text` (values with their marks glued on)."""
    rows = {}
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] in runs:
            rows.setdefault(parts[0], []).extend(parts[1:])  # a wide table goes on in blocks of columns
    return rows


@pytest.mark.django_db
@pytest.mark.parametrize("layout", TABLE_LAYOUTS)
def test_latex_table_cells_are_the_report_tables(judged, layout):
    report = build(baseline="a")
    table = selectors.report_table(report, layout)
    tex = table_tex(table)
    text = tables.table_text(table)
    runs = [row["run"] for row in table["rows"]]
    assert _latex_rows(tex) == _text_rows(text, runs)
    assert len(_latex_rows(tex)["a"]) == len(table["columns"]) + 2 * len(table["correlations"])
    # Each value has ± half its interval under it; the note states the test and the correction (and the
    # * only when a cell carries it); labels are escaped ([ ] of RaB[tf]); nothing is scaled.
    halves = re.findall(r"\$\\pm (\d\.\d{4})\$", tex)
    cell = table["rows"][0]["cells"][0]
    assert f"{(cell['ci_high'] - cell['ci_low']) / 2:.4f}" == halves[0]
    assert "two-sided paired t-test" in tex and "Holm \\cite{holm1979}" in tex and "\\texttt{a}" in tex
    assert ("*\\,$p <" in tex) == any(c["mark"] == "*" for row in table["rows"] for c in row["cells"])
    assert "resizebox" not in tex and "scalebox" not in tex and "cutoff 10" not in tex
    assert "\\toprule" in tex and "\\bottomrule" in tex and f"\\label{{tab:{layout}}}" in tex
    if layout == "sigir2020":
        assert "RaB{[}tf{]}@1" in tex and "MRR@2" in tex


def test_marks_become_superscripts_from_a_hand_made_table():
    """A significant cell and a significant correlation, with a run name full of LaTeX's specials."""
    table = {
        "layout": "ecir2024",
        "title": "T & Co",
        "cutoff": 10,
        "baseline": "bm25",
        "significance": {"test": "t", "family": "f", "correction": "Holm", "alpha": 0.05, "baseline": "bm25"},
        "correlation_significance": {"test": "r", "family": "g", "correction": "Holm", "alpha": 0.05},
        "columns": [{"label": "nDCG@10"}],
        "correlations": [{"a": "X", "b": "Y"}],
        "missing": ["MRR"],
        "rows": [
            {
                "run": "bert_50%#1",
                "cells": [{"value": -0.12345, "mark": "*", "p_value": 0.0123}],
                "correlations": [{"pearson_r": 0.5, "pearson_mark": "†", "kendall_tau": None, "kendall_mark": ""}],
            }
        ],
    }
    tex = table_tex(table)
    assert r"nDCG@10 & $-0.1235$* \\" in tex and r"Pearson $r$ & $+0.500$$\dagger$ \\" in tex
    assert r"Kendall $\tau$ & -- \\" in tex and r"bert\_50\%\#1" in tex.replace(r"\\", "").replace("}", "").replace(
        "{", ""
    )
    assert r"\caption{T \& Co: each run's mean over the queries (rows: measures; columns: runs).}" in tex
    assert r"Over the queries: X vs Y" in tex
    assert r"*\,$p < 0.05$ (adjusted) against \texttt{bm25}" in tex and r"$\dagger$\,correlation with" in tex
    assert "Not in this report: MRR." in tex
    # τ is τ-b (scipy's kendalltau): Kendall's 1945 paper on ties, not the 1938 τ-a.
    assert "kendall1945" in cited_keys(tex) and "kendall1938" not in tex and r"Kendall's $\tau$ is $\tau$-b" in tex
    entry = bibtex(["kendall1945"])
    assert "The Treatment of Ties in Ranking Problems" in entry and "year    = {1945}" in entry and "{33}" in entry


def test_escape():
    assert escape("a_b & c% $d #e {f} ~g ^h \\i") == (r"a\_b \& c\% $\$$d \#e \{f\} \~{}g \^{}h $\backslash$i")
    assert escape("τ ≥ 1 – Müller [x] 日") == r"$\tau$ $\geq$ 1 -- Müller {[}x{]} ?"


def test_bibliography_holds_exactly_the_cited_works():
    text = r"see \cite{wilson1927,holm1979} and \citep[p.~2]{efron1979}; again \cite{holm1979}"
    assert cited_keys(text) == ["wilson1927", "holm1979", "efron1979"]
    assert BIB_KEY.findall(bibtex(cited_keys(text))) == ["wilson1927", "holm1979", "efron1979"]
    assert all(BIB_KEY.findall(entry) == [key] for key, entry in ENTRIES.items())
    with pytest.raises(KeyError, match="nobody2000"):
        bibtex(["nobody2000"])


def _cites_and_bib(files: dict[str, bytes]) -> tuple[list[str], list[str]]:
    texts = [body.decode() for name, body in files.items() if name.endswith(".tex")]
    return sorted(cited_keys(*texts)), sorted(BIB_KEY.findall(files["references.bib"].decode()))


@pytest.mark.django_db
@pytest.mark.slow
def test_given_queries_bundle_cites_what_it_uses(judged):
    report = build(baseline="a")
    files = paper_files(report)
    assert set(files) == {
        "README.txt", "main.tex", "methods.tex", "limitations.tex", "references.bib", ".zenodo.json",
        "table-ecir2024.tex", "table-sigir2020.tex", "table-exposure.tex",
        "fig-cutoffs.pdf", "fig-cutoffs.tex", "fig-distribution.pdf", "fig-distribution.tex",
        "fig-tradeoff.pdf", "fig-tradeoff.tex",
    }  # fmt: skip
    assert all(files[name].startswith(b"%PDF-") for name in files if name.endswith(".pdf"))
    cites, bib = _cites_and_bib(files)
    assert cites == bib
    methods = files["methods.tex"].decode()
    assert r"The 3 queries of the query set \texttt{q} were given." in methods
    assert "not annotated" not in methods  # a batch may have labelled them without an export of this set
    for fact in ("cutoffs 1 and 2", "20 resamples, seed 0", r"\texttt{a}", r"\cite{student1908}", "ir\\_measures"):
        assert fact in methods, fact
    # No annotation: nothing about agreement, Wilson or Dawid–Skene is cited.
    assert not {"krippendorff2018", "wilson1927", "dawid1979", "angelopoulos2023ppi"} & set(cites)
    # The same bytes on each build (undated PDFs): the page's zip and the API's are reproducible.
    assert paper_files(report) == files


@pytest.mark.django_db
@pytest.mark.slow
def test_methods_state_the_batchs_facts_for_a_report_on_its_export(batch, tmp_path, figures_once):
    """A report on the query set a batch's export registered is described by that batch's facts,
    each figure as ``study_facts`` gives it."""
    export_queries(batch, "non-gendered", tmp_path / "ng.tsv", as_query_set="ng")
    call_command("bias_report", queries="ng", runs="a,c", cutoffs="1,2", bootstrap=20, name="ng-rep", verbosity=0)
    report = Report.objects.get(name="ng-rep")
    facts = annotation_selectors.study_facts(batch)
    methods = paper_files(report)["methods.tex"].decode()
    agreement, share = facts["agreement"], facts["non_gendered_share"]
    assert f"Krippendorff's $\\alpha = {agreement['krippendorff_alpha']:.3f}$" in methods
    assert f"{share['count']} of the {share['total']} labelled queries" in methods
    assert f"{100 * share['estimate']:.1f}\\%" in methods  # the share and its interval in one form
    assert f"[{100 * share['ci'][0]:.1f}\\%, {100 * share['ci'][1]:.1f}\\%]" in methods
    assert (
        "labelled as non-gendered, female, male or other or multiple genders by 3 in-house annotators (3 queries per task"
        in methods
        # In-house: the reward is nominal (issue 54), as the card and the checklist say it.
        and "with a nominal reward of 0.05 USD per task, which the platform does not pay; "
        f"{annotation_selectors.batch_state(batch)['spent']:.2f} USD spent in all"
        in methods
    )
    assert "total cost" not in methods and "majority vote" not in methods
    assert (
        f"The report measures the {facts['labels']['counts']['n']} queries labelled non-gendered that the batch's "
        r"export wrote as the query set \texttt{ng}." in methods
    )
    assert r"The runs rank the passages of the collection \texttt{tiny}." in methods
    assert f"{facts['labels']['set_aside']['disputed']} set aside as disputed" in methods
    cites, bib = _cites_and_bib(paper_files(report))
    assert cites == bib and {"krippendorff2018", "wilson1927"} <= set(cites)
    assert "were given" not in methods


@pytest.mark.django_db
@pytest.mark.slow
def test_report_on_a_batch_uses_its_combined_marks_and_cites_dawid_skene(batch, world, figures_once):
    from metrics import services
    from pooling.models import Run

    runs = [Run.objects.get(name=n) for n in ("a", "b", "c")]
    settings = services.ReportSettings(cutoffs=(1, 2), bootstrap_samples=200, seed=3)
    report = services.build_batch_report("on-batch", batch, runs, settings, baseline=runs[0], bar=False)
    files = paper_files(report)
    methods = files["methods.tex"].decode()
    assert "Dawid--Skene" in methods and "bootstrap of the label-corrected paired difference" in methods
    table = selectors.report_table(report, "ecir2024")
    tex = files["table-ecir2024.tex"].decode()
    assert _latex_rows(tex) == _text_rows(tables.table_text(table), [r["run"] for r in table["rows"]])
    assert "bootstrap of the label-corrected paired difference" in tex  # the footnote states the combined test
    # The labels' table: the page's and uncertainty_table's figures, for the papers' four metrics.
    summary = selectors.report_summary(report)
    shown = summary[(summary["cutoff"] == 2) & summary["metric"].isin(["RaB", "ARaB", "NFaiRR", "TExFAIR"])]
    labels = files["table-labels.tex"].decode()
    # RaB and ARaB (tf, bool), NFaiRR, TExFAIR (rbdf, plain): 7 blocks of 3 runs, each run's value and
    # corrected value with ± half their intervals, and each run but the baseline's difference intervals.
    assert len(shown) == 7 * 3
    for r in shown.itertuples(index=False):
        value = f"${r.value:.4f}$ $\\pm {(r.ci_high - r.ci_low) / 2:.4f}$"
        assert f"{r.run} & {value} & " in labels
        if r.combined_high == r.combined_high:  # not NaN (a constant run has no label-corrected interval)
            corrected = f"${r.corrected:.4f}$ $\\pm {(r.combined_high - r.combined_low) / 2:.4f}$"
            # § beside it when the report's crowd check warns of the intervals with labels (said in the note).
            corrected += "$\\S$" if (report.crowd_quality or {}).get("warning") else ""
            assert f"{value} & {corrected} & {r.label_share:.0%}".replace("%", "\\%") in labels
        if r.run != "a":
            assert f"{r.run} & $[{r.difference_low:.3f}, {r.difference_high:.3f}]$" in labels
    assert ("the intervals with labels may be too narrow" in labels) == bool(
        (report.crowd_quality or {}).get("warning")
    )
    assert r"\label{tab:labels}" in labels and "from \\texttt{a}" in labels
    assert "resizebox" not in labels


def _label_rows(tex: str) -> list[str]:
    """The runs' rows of ``table-labels.tex`` in ``uncertainty_table``'s notation."""
    rows = []
    for line in tex.split("\\bottomrule")[0].splitlines():
        if not line.endswith("\\\\") or line.startswith("\\multicolumn") or line.startswith("Run"):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)&", line.removesuffix("\\\\"))]
        out = [cells[0]]
        for cell in cells[1:]:
            cell = cell.replace("\\%", "%")
            if cell == "--":
                out.append("–")
            elif cell.startswith("$["):
                out.append(cell.strip("$"))
            else:
                out.append(_latex_cell(cell) if cell.startswith("$") else cell)
        rows.append(" ".join(out))
    return rows


def _compile(folder: Path) -> str:
    """pdflatex, bibtex, pdflatex twice (as README.txt says); the final log."""
    run = {"cwd": folder, "capture_output": True, "text": True, "timeout": 120}
    latex = ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "main.tex"]
    first = subprocess.run(latex, **run)
    assert first.returncode == 0, first.stdout[-3000:]
    if shutil.which("bibtex"):
        bib = subprocess.run(["bibtex", "main"], **run)
        assert bib.returncode == 0, bib.stdout
    for _ in range(2):
        done = subprocess.run(latex, **run)
        assert done.returncode == 0, done.stdout[-3000:]
    return (folder / "main.log").read_text(errors="replace")


needs_pdflatex = pytest.mark.skipif(
    shutil.which("pdflatex") is None, reason="pdflatex is not installed (apt-get install texlive-latex-recommended)"
)


@needs_pdflatex
@pytest.mark.slow
@pytest.mark.django_db
def test_command_writes_a_bundle_that_compiles(judged, tmp_path, figures_once):
    build(baseline="a")
    out = io.StringIO()
    call_command("paper", "tab", out=str(tmp_path / "bundle"), stdout=out)
    assert "Paper bundle of tab in" in out.getvalue()
    log = _compile(tmp_path / "bundle")
    assert "undefined" not in log.lower() and "Citation" not in log, log[-2000:]
    assert (tmp_path / "bundle" / "main.pdf").stat().st_size > 10_000
    bbl = (tmp_path / "bundle" / "main.bbl").read_text()
    assert "Rekabsaz" in bbl and "Holm" in bbl
    # Written again over the earlier bundle (it holds main.tex): replaced, the compile outputs gone.
    call_command("paper", "tab", out=str(tmp_path / "bundle"), stdout=io.StringIO())
    assert not (tmp_path / "bundle" / "main.pdf").exists() and (tmp_path / "bundle" / "main.tex").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".bundle")]  # no temporary folder left


@needs_pdflatex
@pytest.mark.slow
@pytest.mark.django_db
def test_bundles_of_an_annotated_study_compile(batch, tmp_path, figures_once):
    """On the set the batch's export registered, and on the batch's labels (with the labels' table)."""
    export_queries(batch, "non-gendered", tmp_path / "ng.tsv", as_query_set="ng")
    call_command("bias_report", queries="ng", runs="a,c", cutoffs="1,2", bootstrap=20, name="ng-rep", verbosity=0)
    call_command(
        "bias_report", from_batch=batch.name, runs="a,b,c", cutoffs="1,2", bootstrap=20, baseline="a",
        name="on-batch", verbosity=0, stdout=io.StringIO(),
    )  # fmt: skip
    for name in ("ng-rep", "on-batch"):
        folder = write_paper_bundle(Report.objects.get(name=name), tmp_path / f"paper-{name}")
        log = _compile(folder)
        assert "undefined" not in log.lower(), log[-2000:]
    assert (tmp_path / "paper-on-batch" / "table-labels.tex").exists()


@pytest.mark.django_db
def test_command_refuses_a_folder_that_is_not_a_bundle(judged, tmp_path):
    build()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("keep me")
    with pytest.raises(CommandError, match="not a paper bundle"):
        call_command("paper", "tab", out=str(tmp_path / "mine"))
    assert (tmp_path / "mine" / "thesis.tex").read_text() == "keep me"
    with pytest.raises(CommandError, match="does not exist"):
        call_command("paper", "tab", out=str(tmp_path / "no" / "such"))
    with pytest.raises(CommandError, match="no report named 'nope'"):
        call_command("paper", "nope", out=str(tmp_path / "x"))


@pytest.mark.django_db
@pytest.mark.slow
def test_page_link_and_api_give_the_zip_to_researchers_only(
    judged, client, django_user_model, django_capture_on_commit_callbacks, monkeypatch, figures_once
):
    """The zip is built once, in a background job (the request only starts it: 202 with the job from
    the API, the job's page from the site), then served as a file on every download."""
    from core.models import Job
    from publishing.services import paper

    build(baseline="a")
    url, api = "/metrics/tab/paper.zip", "/api/metrics/reports/tab/paper/"
    assert client.get(url).status_code == 302  # anonymous: to the login page
    assert client.get(api).status_code in (401, 403)
    client.force_login(django_user_model.objects.create_user("ann", password="pw-secret-123"))
    assert client.get(url).status_code in (302, 403)
    refused = client.get(api)
    assert refused.status_code == 403 and refused.json()["detail"]
    assert not Job.objects.exists()
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    assert 'href="/metrics/tab/paper.zip"' in client.get("/metrics/tab/").content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        started = client.get(api)
    job = Job.objects.get(kind="metrics.paper")
    assert (
        started.status_code == 202 and started.json()["id"] == job.pk and started["Location"] == f"/api/jobs/{job.pk}/"
    )
    assert job.status == Job.Status.DONE and job.result["url"] == url
    monkeypatch.setattr(paper, "paper_zip", lambda report: pytest.fail("built again"))
    for address in (url, api):
        response = client.get(address)
        assert response.status_code == 200 and response["Content-Type"] == "application/zip", address
        assert 'filename="tab-paper.zip"' in response["Content-Disposition"]
        names = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content))).namelist()
        assert "tab-paper/main.tex" in names and "tab-paper/table-ecir2024.tex" in names
    assert Job.objects.count() == 1
    assert client.get("/api/metrics/reports/nope/paper/").status_code == 404

    monkeypatch.undo()
    build("tab2", baseline="a")  # the page starts the job and shows its progress, which leads back here
    with django_capture_on_commit_callbacks(execute=True):
        page = client.get("/metrics/tab2/paper.zip")
    job = Job.objects.filter(kind="metrics.paper").latest("pk")
    assert page.status_code == 302 and page["Location"] == f"/jobs/{job.pk}/" and job.status == Job.Status.DONE
    assert client.get("/metrics/tab2/paper.zip").status_code == 200
    build("tab3")
    Path(Report.objects.get(name="tab3").per_query).unlink()
    gone = client.get("/api/metrics/reports/tab3/paper/")
    assert gone.status_code == 404 and "missing" in gone.json()["detail"]
    assert client.get("/metrics/tab3/paper.zip").status_code == 404


@pytest.mark.django_db
@pytest.mark.slow
def test_bias_only_report_without_baseline(world, figures_once):
    """No qrels, no baseline: the tables say which columns are missing, carry no marks or p, cite no test."""
    call_command("bias_report", queries="q", runs="a,c", cutoffs="1,2", bootstrap=20, name="bare", verbosity=0)
    files = paper_files(Report.objects.get(name="bare"))
    assert "fig-tradeoff.pdf" not in files and "fig-cutoffs.pdf" in files
    ecir = files["table-ecir2024.tex"].decode()
    assert "Not in this report: MRR, nDCG." in ecir and "$p$" not in ecir and "^{*}" not in ecir
    cites, bib = _cites_and_bib(files)
    assert cites == bib and "student1908" not in cites and "macavaney2022" not in cites
    assert "compared with the baseline" not in files["methods.tex"].decode()


@pytest.mark.django_db
@pytest.mark.slow
def test_out_replaces_only_its_own_bundle(judged, tmp_path, monkeypatch, figures_once):
    """A folder holding a ``main.tex`` of the researcher's is not a bundle: refused, the files named
    and kept. An earlier bundle (its ``.paper-bundle`` marker) with LaTeX's build outputs is replaced;
    one holding anything else is refused; ``--out .`` is refused."""
    build()
    thesis = tmp_path / "thesis"
    thesis.mkdir()
    (thesis / "main.tex").write_text("my thesis")
    (thesis / "chapter1.tex").write_text("keep me")
    with pytest.raises(CommandError, match=r"not a paper bundle: it holds chapter1\.tex, main\.tex"):
        call_command("paper", "tab", out=str(thesis))
    assert (thesis / "main.tex").read_text() == "my thesis" and (thesis / "chapter1.tex").read_text() == "keep me"

    bundle = tmp_path / "bundle"
    call_command("paper", "tab", out=str(bundle), stdout=io.StringIO())
    marker = json.loads((bundle / ".paper-bundle").read_text())
    assert marker["report"] == "tab" and "main.tex" in marker["files"] and "methods.tex" in marker["files"]
    for output in ("main.pdf", "main.aux", "main.log", "main.bbl", "main.blg", "main.out"):
        (bundle / output).write_text("built")
    call_command("paper", "tab", out=str(bundle), stdout=io.StringIO())  # build outputs: replaced
    assert not (bundle / "main.pdf").exists() and (bundle / "main.tex").exists()
    (bundle / "notes.txt").write_text("mine")
    (bundle / "sections").mkdir()
    with pytest.raises(CommandError, match=r"it holds notes\.txt, sections"):
        call_command("paper", "tab", out=str(bundle))
    assert (bundle / "notes.txt").read_text() == "mine"

    # A bundle of an earlier release (no marker; the demo's folder): recognised by its own README.txt.
    (bundle / "notes.txt").unlink()
    (bundle / "sections").rmdir()
    (bundle / ".paper-bundle").unlink()
    (bundle / "main.pdf").write_text("built")
    call_command("paper", "tab", out=str(bundle), stdout=io.StringIO())
    assert (bundle / ".paper-bundle").exists() and not (bundle / "main.pdf").exists()
    (bundle / ".paper-bundle").unlink()
    (bundle / "notes.txt").write_text("mine")
    with pytest.raises(CommandError, match=r"it holds notes\.txt, which"):
        call_command("paper", "tab", out=str(bundle))
    (bundle / "README.txt").write_text("my own readme")  # main.tex beside a README of the researcher's
    with pytest.raises(CommandError, match=r"it holds .*README\.txt"):
        call_command("paper", "tab", out=str(bundle))

    monkeypatch.chdir(bundle)
    for here in (".", "..", str(bundle)):
        with pytest.raises(CommandError, match="current folder or one of its parents"):
            call_command("paper", "tab", out=here)
    assert (bundle / "notes.txt").exists() and (bundle / "main.tex").exists()


@pytest.mark.django_db
@pytest.mark.slow
def test_a_failed_final_rename_puts_the_earlier_bundle_back(judged, tmp_path, monkeypatch, figures_once):
    report = build()
    bundle = write_paper_bundle(report, tmp_path / "bundle")
    before = {path.name: path.read_bytes() for path in bundle.iterdir()}
    rename = os.rename  # genderbias.files.atomic.replace_folder's

    def failing(source, target):
        name = Path(source).name
        if Path(target) == bundle and name.startswith(".bundle.") and ".old" not in name:
            raise OSError("simulated: the disk went away")
        return rename(source, target)

    monkeypatch.setattr(os, "rename", failing)
    with pytest.raises(OSError, match="simulated"):
        write_paper_bundle(report, bundle)
    assert {path.name: path.read_bytes() for path in bundle.iterdir()} == before
    assert not [path for path in tmp_path.iterdir() if path.name.startswith(".bundle")]  # no temporary folder left


@pytest.mark.django_db
@pytest.mark.slow
def test_the_bundle_reads_the_per_query_file_once(judged, monkeypatch, figures_once):
    """Three tables and the figures from one read of each stored file (a large report's file is read
    in seconds; the old bundle read it four times)."""
    report = build(baseline="a")
    reads = []
    read = selectors._read
    monkeypatch.setattr(selectors, "_read", lambda *args: reads.append(args[2]) or read(*args))
    files = paper_files(report)
    assert reads == ["per-query file"] and "table-exposure.tex" in files


@pytest.mark.django_db
@pytest.mark.slow
def test_methods_say_when_the_labels_changed_after_the_report(batch, tmp_path, django_user_model, figures_once):
    """A ruling after the export (or after a report on the batch's labels) changes the batch's facts
    but not the report: methods.tex says so (a comment and a sentence) and the command warns."""
    from annotation.quality.services.adjudication import adjudicate

    export_queries(batch, "non-gendered", tmp_path / "ng.tsv", as_query_set="ng")
    call_command("bias_report", queries="ng", runs="a,c", cutoffs="1,2", bootstrap=20, name="ng-rep", verbosity=0)
    call_command(
        "bias_report", from_batch=batch.name, runs="a,b,c", cutoffs="1,2", bootstrap=20, baseline="a",
        name="on-batch", verbosity=0, stdout=io.StringIO(),
    )  # fmt: skip
    for name in ("ng-rep", "on-batch"):
        assert "changed after" not in paper_files(Report.objects.get(name=name))["methods.tex"].decode()
    researcher = django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True)
    adjudicate(batch, "3", "f", "a later ruling", researcher)
    ng = paper_files(Report.objects.get(name="ng-rep"))["methods.tex"].decode()
    assert "% NOTE: the labels changed after the report was built." in ng
    assert "changed after its export wrote this report's" in ng and "non-gendered queries (labels then:" in ng
    on_batch = paper_files(Report.objects.get(name="on-batch"))["methods.tex"].decode()
    assert "changed after the report was built (a ruling or a later sync)" in on_batch
    err = io.StringIO()
    call_command("paper", "ng-rep", out=str(tmp_path / "b"), stdout=io.StringIO(), stderr=err)
    assert "Warning: The labels of batch" in err.getvalue()


@pytest.mark.django_db
@pytest.mark.slow
def test_methods_state_the_effectiveness_rule_the_report_was_built_with(judged, figures_once):
    """A report built before unreturned judged queries counted as 0 (``unreturned`` null) left them out."""
    report = build()
    assert "a judged query a run did not return counts as 0" in paper_files(report)["methods.tex"].decode()
    Report.objects.filter(pk=report.pk).update(unreturned=None)
    methods = paper_files(Report.objects.get(pk=report.pk))["methods.tex"].decode()
    assert "a judged query a run did not return is left out of that run's means" in methods
    assert "counts as 0" not in methods


@pytest.mark.django_db
def test_an_unreadable_per_query_file_is_a_json_400_not_a_500(judged, client, django_user_model):
    """A per-query file that exists but is not Parquet (a truncated copy, a disk error)."""
    report = build(baseline="a")
    Path(report.per_query).write_bytes(b"not a parquet")
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    for address in ("/api/metrics/reports/tab/paper/", "/api/metrics/reports/tab/table/?layout=ecir2024"):
        response = client.get(address)
        assert 400 <= response.status_code < 500, (address, response.status_code)
        assert "per-query file of report 'tab' cannot be read" in response.json()["detail"], address
    with pytest.raises(CommandError, match="cannot be read"):
        call_command("paper", "tab", out=str(Path(report.per_query).parent / "bundle"))


@needs_pdflatex
@pytest.mark.skipif(shutil.which("pdffonts") is None, reason="pdffonts is not installed (poppler-utils)")
def test_escaped_names_keep_type1_fonts(tmp_path):
    """A ``$`` (or any escaped special) in a name sets in the document's Type 1 fonts: no bitmap (Type 3)
    font is pulled in (text-mode ``\\$`` takes the dollar from a TS1 font Debian has only as bitmaps)."""
    from publishing.latex import document

    (tmp_path / "methods.tex").write_text(escape("run $5 & 10% #1 a_b {x} ~y ^z \\w <v> |u| [t] Müller τ ≥ –"))
    (tmp_path / "main.tex").write_text(document("Fonts", [], []))
    done = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "main.tex"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:]
    fonts = subprocess.run(["pdffonts", "main.pdf"], cwd=tmp_path, capture_output=True, text=True).stdout
    assert "Type 3" not in fonts and "Type 1" in fonts, fonts


@pytest.mark.django_db
@pytest.mark.slow
def test_the_cutoff_figure_caption_says_what_is_drawn(world, figures_once):
    call_command("bias_report", queries="q", runs="a,c", cutoffs="2", bootstrap=20, name="one", verbosity=0)
    caption = paper_files(Report.objects.get(name="one"))["fig-cutoffs.tex"].decode()
    assert "at cutoff 2" in caption and "no band is drawn" in caption and "as bands" not in caption
    call_command("bias_report", queries="q", runs="a,c", cutoffs="1,2", bootstrap=20, name="two", verbosity=0)
    assert "as bands" in paper_files(Report.objects.get(name="two"))["fig-cutoffs.tex"].decode()


@pytest.mark.django_db
@pytest.mark.slow
def test_the_tradeoff_figure_has_the_pages_default_axes(judged, client, django_user_model):
    """One choice of axes (``selectors.tradeoff_axes``): nDCG@1 against NFaiRR at nDCG's cutoff, on the
    page and in the bundle (the bundle used to take NFaiRR at the table's cutoff, 2)."""
    report = build(measures="nDCG@1,MRR@2")
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    title = client.get("/metrics/tab/").context["tradeoff"]["title"]
    caption = paper_files(report)["fig-tradeoff.tex"].decode()
    assert title == "NFaiRR@1 against nDCG@1"
    assert "NFaiRR@1 against effectiveness (nDCG@1)" in caption


@pytest.mark.django_db
def test_a_second_download_joins_the_bundles_job_still_queued(judged):
    from core.models import Job
    from publishing.services.paper import start_paper_bundle

    report = build()
    first = start_paper_bundle(report, may_start=True)  # not committed: still pending
    assert start_paper_bundle(report, may_start=True) == first and Job.objects.filter(kind="metrics.paper").count() == 1
    Job.objects.filter(pk=first.pk).update(status=Job.Status.FAILED)
    assert start_paper_bundle(report, may_start=True) != first  # a failed build is tried again

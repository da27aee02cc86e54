"""Every warning travels with its figure (issue 67): a Grep-BiasIR report on a BM25 run (the run written in
:mod:`tests.genderbias.ranking.test_ties` from Robertson's formula; the three wordings of a document tie)
flags the figures whose range over the orders of ties holds 0. The ACM, LNCS and article bundles, compiled
with pdflatex and read with pdftotext, name each such figure with its tie range and the sign warning, and
the table that shows it marks it; the plots draw the tie range. Which figures are flagged is computed here
from the stored ranges (lowest ≤ 0 ≤ highest of a signed metric), not taken from the code under test."""

from __future__ import annotations

import io
import re
import subprocess

import pytest
from django.core.management import call_command

from metrics import selectors
from pooling.models import Collection, QuerySet
from pooling.services import import_run
from publishing.latex import TEMPLATES
from publishing.services.paper import write_paper_bundle
from tests.genderbias.ranking.test_ties import bm25_run, read_grep_biasir

from .test_paper_templates import compile_bundle, needs_classes

SIGNED = {"RaB", "ARaB"}
DEPTH = 50  # documents per query in the run: deeper than the largest cutoff (30)


@pytest.fixture
def grep_bm25_report(db, reference_dir, tmp_path):
    from metrics.services import ReportSettings, build_report

    call_command("import_named_set", "grep-biasir", stdout=io.StringIO())
    queries, docs = read_grep_biasir(reference_dir)
    run = bm25_run(queries, docs)
    lines = [
        f"{qid} Q0 {docid} {rank} {score:.6f} bm25\n" for qid, docid, rank, score in run.iter_rows() if rank <= DEPTH
    ]
    trec = tmp_path / "bm25.trec"
    trec.write_text("".join(lines))
    stored = import_run(trec, "bm25", Collection.objects.get(name="grep-biasir")).obj
    return build_report(
        "grep-bm25", QuerySet.objects.get(name="grep-biasir"), [stored], ReportSettings(bootstrap_samples=200)
    )


def flagged(report) -> list[dict]:
    """The figures whose range over the orders of ties holds 0, from the stored ranges."""
    summary = selectors.report_summary(report)
    return [
        row
        for row in summary.to_dict("records")
        if row["metric"] in SIGNED
        and row["tie_low"] is not None
        and row["tie_low"] == row["tie_low"]
        and row["tie_low"] <= 0 <= row["tie_high"]
    ]


def pdf_text(pdf) -> str:
    text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    # pdftotext gives a math minus as U+2212; lines are joined and words hyphenated at a line's end rejoined.
    return re.sub(r"(\w)- (\w)", r"\1\2", re.sub(r"\s+", " ", text.replace("\u2212", "-")))


@pytest.mark.slow
@needs_classes
def test_every_bundle_names_ties_and_the_sign_warning_beside_each_flagged_figure(grep_bm25_report, tmp_path):
    report = grep_bm25_report
    undecided = flagged(report)
    assert len(undecided) >= 4, "Grep-BiasIR's tied wordings leave RaB/ARaB signs undecided"
    for template in TEMPLATES:
        out = tmp_path / template
        write_paper_bundle(report, out, template=template)
        # README.txt lists exactly the files written (a report on given queries: no checklist, no task page).
        written = {p.name for p in out.iterdir() if p.name != ".paper-bundle"}
        readme = (out / "README.txt").read_text()
        section = readme[readme.index("Files (") : readme.index("Using it in a paper")]
        listed = set()
        for line in section.splitlines()[1:]:
            if line.startswith("  ") and not line.startswith("   "):
                head = line.split()[0]
                listed |= set(re.findall(r"[\w.-]+\.\w+", line[len(head) + 2 :])) if "*" in head else {head}
        assert listed == written, (template, listed ^ written)
        assert "checklist.tex" not in readme and "hit-page" not in readme
        compile_bundle(out)
        text = pdf_text(out / "main.pdf")
        # The SIGIR 2020 table shows every RaB/ARaB figure: under each flagged one its range, marked ‡,
        # and the table's note says what the mark means.
        for row in undecided:
            cell = f"{row['value']:.4f} ±{abs(row['ci_high'] - row['ci_low']) / 2:.4f} "
            cell += f"[{row['tie_low']:.3f}, {row['tie_high']:.3f}]‡"
            assert cell in text.replace("± ", "±").replace(" ‡", "‡"), (template, cell)
        assert "‡ the range over the orders of ties holds 0: the ranking does not decide the sign" in text, template
        # Limitations names every flagged figure with its value, its tie range and the warning, and no
        # longer says the intervals carry everything there is.
        limitations = text[text.upper().rindex("LIMITATIONS") :]
        assert "not the order of tied documents" in limitations, template
        warning = limitations.index("the ranking does not decide the sign")
        for row in undecided:
            named = (
                f"{row['metric']}[{row['variant']}]@{row['cutoff']} {row['value']:.4f} "
                f"(ties {row['tie_low']:.4f} to {row['tie_high']:.4f})"
            )
            assert named in limitations[warning:], (template, named)  # the column may go on after floats
        # The title counts the run in the singular and names the set; acmart's placeholders are gone.
        assert "Gender Bias in the Rankings of One Retrieval Run on 117 Grep-BiasIR Queries" in text[:400], template
        assert "Conference’17" not in text and "ISBN" not in text and "nnnnnnn" not in text, template
        # The cutoff figure's caption says what its dotted ranges and circles on 0 are.
        assert "Dotted beside a point: its range over the orders of tied documents" in text, template
        assert f"where that range holds 0 ({len(undecided)} figures): the ranking does not decide the sign" in text

"""The checklist in a batch report's paper bundle compiles in both emulated templates (LNCS one column,
sigconf two columns) with the task page's screenshot as a column-wide figure, nothing overflowing."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from metrics.models import Report
from publishing.screenshot import PNG_SIGNATURE
from publishing.services.paper import write_paper_bundle
from publishing.services.records import HIT_PAGE, HIT_SCREENSHOT
from tests.publishing.test_paper_pages import OVERFULL_TOLERANCE, TEMPLATES, _latex, needs_tools, overfull


@needs_tools
@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db
def test_the_checklist_with_the_task_pages_screenshot_compiles_in_both_templates(batch, tmp_path):
    call_command(
        "bias_report", from_batch=batch.name, runs="a,b,c", cutoffs="1,2", bootstrap=20, baseline="a",
        name="on-batch", verbosity=0, stdout=io.StringIO(),
    )  # fmt: skip
    folder = write_paper_bundle(Report.objects.get(name="on-batch"), tmp_path / "bundle")
    assert (folder / HIT_PAGE).is_file()
    assert (folder / HIT_SCREENSHOT).read_bytes().startswith(PNG_SIGNATURE)  # the job's and command's default
    main = (folder / "main.tex").read_text()
    assert main.index(r"\bibliography{references}") < main.index(r"\input{checklist}")
    checklist = (folder / "checklist.tex").read_text()
    assert rf"\includegraphics[width=332pt]{{{HIT_SCREENSHOT}}}" in checklist and r"\begin{figure*}" in checklist
    for template, preamble in TEMPLATES.items():
        (folder / f"main-{template}.tex").write_text(main.replace(r"\documentclass[11pt]{article}", preamble))
        log = _latex(folder, f"main-{template}.tex")
        assert HIT_SCREENSHOT in log  # the screenshot is placed
        assert [w for w in overfull(log) if w > OVERFULL_TOLERANCE] == [], (template, overfull(log))


@pytest.mark.django_db
@pytest.mark.slow
def test_without_chromium_the_command_warns_and_writes_the_page(batch, tmp_path, monkeypatch, settings):
    settings.PAPER_SCREENSHOTS = True  # as in production: only the missing browser stops it
    monkeypatch.setenv("CHROMIUM_PATH", str(tmp_path / "no-chromium"))
    call_command(
        "bias_report", from_batch=batch.name, runs="a,c", cutoffs="1,2", bootstrap=20,
        name="on-batch", verbosity=0, stdout=io.StringIO(),
    )  # fmt: skip
    err = io.StringIO()
    call_command("paper", "on-batch", out=str(tmp_path / "bundle"), stdout=io.StringIO(), stderr=err)
    assert f"Chromium was not found at {tmp_path / 'no-chromium'}" in err.getvalue()
    assert (tmp_path / "bundle" / HIT_PAGE).is_file() and not (tmp_path / "bundle" / HIT_SCREENSHOT).exists()
    checklist = (tmp_path / "bundle" / "checklist.md").read_text()
    assert "Chromium was not found" in checklist and f"{HIT_PAGE} is the page itself" in checklist

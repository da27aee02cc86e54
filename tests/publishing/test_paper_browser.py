"""The paper bundle in a real browser: a researcher downloads it from the report page, its
``main.tex`` compiles, and the first page (rendered to PNG by poppler) shows in Chromium as a
page with text on it, not a blank."""

from __future__ import annotations

import base64
import io
import shutil
import subprocess
import time
import zipfile

import pytest
from django.core.management import call_command

from core.models import Job
from tests.browser_jobs import ACTION_MS, JOB_DEADLINE_MS

QRELS = "1 0 d1 2\n1 0 d3 0\n2 0 d4 1\n3 0 d2 1\n"


@pytest.fixture
def report(world, db):
    path = world / "qrels.txt"
    path.write_text(QRELS)
    call_command("import_qrels", str(path), name="judged", queries="q", collection="tiny", verbosity=0)
    call_command(
        "bias_report", queries="q", runs="a,c", cutoffs="1,2", qrels="judged", measures="MRR@2,nDCG@2",
        baseline="a", bootstrap=20, name="paperish", verbosity=0, stdout=io.StringIO(),
    )  # fmt: skip


#: Count the image's dark pixels (all channels below 100) on a canvas, in the page.
DARK_PIXELS = """(img) => {
  const canvas = document.createElement('canvas');
  canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
  const context = canvas.getContext('2d');
  context.drawImage(img, 0, 0);
  const data = context.getImageData(0, 0, canvas.width, canvas.height).data;
  let dark = 0;
  for (let i = 0; i < data.length; i += 4) if (data[i] < 100 && data[i + 1] < 100 && data[i + 2] < 100) dark++;
  return dark;
}"""


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(
    shutil.which("pdflatex") is None or shutil.which("pdftoppm") is None,
    reason="needs pdflatex and pdftoppm (texlive, poppler-utils)",
)
def test_downloaded_bundle_compiles_and_its_first_page_shows(report, browser, live_server, django_user_model, tmp_path):
    django_user_model.objects.create_user("researcher", password="pw-secret-123", is_staff=True)
    context = browser.new_context(base_url=live_server.url, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(ACTION_MS)
    try:
        page.goto("/accounts/login/")
        page.get_by_label("Username").fill("researcher")
        page.get_by_label("Password").fill("pw-secret-123")
        page.get_by_role("button", name="Log in").click()
        page.wait_for_load_state()
        page.goto("/metrics/paperish/")
        # The first download starts the bundle's job and shows its page; once it is done, the page's
        # link (or its own redirect) downloads the kept zip.
        page.locator("#paper-bundle").click()
        page.wait_for_url("**/jobs/*/", timeout=JOB_DEADLINE_MS)
        job = Job.objects.get(kind="metrics.paper")
        for _ in range(JOB_DEADLINE_MS // 100):  # the job's state, with a deadline far above any pace
            job.refresh_from_db()
            if job.status in (Job.Status.DONE, Job.Status.FAILED):
                break
            time.sleep(0.1)
        assert job.status == Job.Status.DONE, job.message
        page.reload()
        with page.expect_download() as download:
            page.locator("#result a").click()
        archive = tmp_path / "paper.zip"
        download.value.save_as(archive)
        assert download.value.suggested_filename == "paperish-paper.zip"
        zipfile.ZipFile(archive).extractall(tmp_path)
        folder = tmp_path / "paperish-paper"

        latex = ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "main.tex"]
        for step in (latex, ["bibtex", "main"], latex, latex):
            if shutil.which(step[0]):
                done = subprocess.run(step, cwd=folder, capture_output=True, text=True, timeout=120)
                assert done.returncode == 0, done.stdout[-2000:]
        subprocess.run(
            ["pdftoppm", "-png", "-r", "50", "-f", "1", "-l", "1", "main.pdf", "page"], cwd=folder, check=True
        )
        png = next(folder.glob("page*.png")).read_bytes()

        page.set_content(
            f'<img id="first" alt="first page" src="data:image/png;base64,{base64.b64encode(png).decode()}">'
        )
        image = page.locator("#first")
        page.wait_for_function("document.getElementById('first').complete")
        width, height = page.evaluate("(img) => [img.naturalWidth, img.naturalHeight]", image.element_handle())
        # A4/letter at 50 dpi: about 413 × 585 (A4) or 425 × 550 (letter) pixels.
        assert 380 <= width <= 460 and 520 <= height <= 620, (width, height)
        dark = page.evaluate(DARK_PIXELS, image.element_handle())
        assert dark > 500, dark  # the title and the methods paragraph, not a blank page
        assert dark < 0.5 * width * height  # nor a black one
    finally:
        context.close()

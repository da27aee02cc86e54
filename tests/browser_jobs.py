"""Following a job's page in a browser test: wait for the job's state, never for a clock.

A job's page polls itself (``templates/core/_job_progress.html``) until its ``#status`` reads done or
failed. Playwright's default wait (10 s in ``tests/conftest.py``) is a clock: a slower machine's job
outlasted it (issue 70.6). These helpers wait for the state, with a deadline so far above any
machine's pace (:data:`JOB_DEADLINE_MS`) that reaching it means the job is stuck, not slow.
"""

from __future__ import annotations

#: How long a browser test waits for a job to end before calling it stuck (milliseconds).
JOB_DEADLINE_MS = 300_000

_ENDED = "() => ['done', 'failed'].includes(document.querySelector('#status')?.textContent.trim())"


def wait_for_job(page) -> None:
    """On a job's page: wait until the job has ended; it must have succeeded (else its message is shown)."""
    page.wait_for_function(_ENDED, timeout=JOB_DEADLINE_MS)
    status = page.locator("#status").inner_text()
    assert status == "done", f"the job {status}: {page.locator('#message').inner_text()}"


def wait_for_image(page, image) -> None:
    """Wait until the ``<img>`` at locator ``image`` has loaded (a plot the server draws on request)."""
    page.wait_for_function(
        "img => img.complete && img.naturalWidth > 0", arg=image.element_handle(), timeout=JOB_DEADLINE_MS
    )


def open_the_result(page) -> None:
    """On a job's page: wait for the job to end, then follow its link to the result."""
    wait_for_job(page)
    # The result's page may compute in its request: its load has the jobs' deadline, not the 10 s action clock
    # (a CI run's click outlasted it, stop 93)
    page.get_by_role("link", name="Open the result").click(timeout=JOB_DEADLINE_MS)

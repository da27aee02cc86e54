"""Following a job's page in a browser test: wait for the job's state, never for a clock.

A job's page polls itself (``templates/core/_job_progress.html``) until its ``#status`` reads done or
failed. Playwright's action clock (:data:`ACTION_MS`) is a clock: a slower machine's job
outlasted it (issue 70.6). These helpers wait for the state, with a deadline so far above any
machine's pace (:data:`JOB_DEADLINE_MS`) that reaching it means the job is stuck, not slow.
"""

from __future__ import annotations

#: How long a browser test waits for a job to end before calling it stuck (milliseconds).
JOB_DEADLINE_MS = 300_000
#: Every browser page's action clock (milliseconds): finding an element, a click and the navigation the click
#: starts, which the click waits for within its own clock. Pages that draw a plot in the request outlasted 10 s
#: three times on a loaded CI machine (stops 91-93), which runs these tests about twice as slowly as a quiet one;
#: a passing test never waits it out.
ACTION_MS = 60_000

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
    # The result's page may compute in its request: its load has the jobs' deadline, not the action clock
    page.get_by_role("link", name="Open the result").click(timeout=JOB_DEADLINE_MS)

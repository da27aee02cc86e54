"""A screenshot of a self-contained HTML page (the task page, for the checklists) by Debian's Chromium, headless and
offline. Pure: HTML in, PNG bytes (or why not) out. Only the job and the command that build the bundle call this,
never a web request: a browser start takes seconds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

#: The window the page is drawn in (CSS pixels): wide and tall enough that the page opens its
#: instructions (its script does from 700 x 700) and shows the first queries below them; narrow
#: enough that, printed with its 16 px body type at 7 pt (:data:`PRINT_POINTS_PER_PIXEL`), it
#: fits a one-column LNCS page (346 pt) and spans a two-column page.
WINDOW = (760, 1000)
#: Device pixels per CSS pixel: the PNG is drawn at twice the window (about 330 dpi when printed).
SCALE = 2
#: Printed size of a CSS pixel: the page's 16 px body type at 7 pt.
PRINT_POINTS_PER_PIXEL = 7 / 16
#: Longest a screenshot may take before it is given up (a browser start on a loaded machine).
TIMEOUT_SECONDS = 90
#: PNG's first eight bytes.
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def chromium_path() -> str:
    """Where Chromium is expected: ``CHROMIUM_PATH``, else ``chromium`` on the PATH, else Debian's place."""
    return os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"


def screenshot(html: str, chromium: str | None = None, window: tuple[int, int] = WINDOW) -> tuple[bytes | None, str]:
    """A PNG of ``html`` rendered by headless Chromium, and ""; or None and why not, in words a researcher can act
    on: never raises for a missing, failing or slow browser (the bundle keeps the HTML and says why)."""
    browser = chromium or chromium_path()
    if not Path(browser).is_file() or not os.access(browser, os.X_OK):
        return None, (
            f"Chromium was not found at {browser} (install Debian's chromium, or set CHROMIUM_PATH), "
            "so the page was not photographed"
        )
    with tempfile.TemporaryDirectory(prefix="hit-page-") as folder:
        page, out = Path(folder) / "page.html", Path(folder) / "page.png"
        page.write_text(html, encoding="utf-8")
        command = [
            browser,
            "--headless",
            "--no-sandbox",  # root in a container has no user namespace for the sandbox
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--disable-extensions",
            "--force-color-profile=srgb",
            "--force-prefers-reduced-motion",
            "--blink-settings=preferredColorScheme=1",  # light, as printed
            f"--user-data-dir={Path(folder) / 'profile'}",
            f"--window-size={window[0]},{window[1]}",
            f"--force-device-scale-factor={SCALE}",
            f"--screenshot={out}",
            page.as_uri(),
        ]
        try:
            done = subprocess.run(command, capture_output=True, timeout=TIMEOUT_SECONDS, check=False)
        except subprocess.TimeoutExpired:
            return None, f"Chromium ({browser}) took over {TIMEOUT_SECONDS} s, so the page was not photographed"
        except OSError as exc:
            return (
                None,
                f"Chromium ({browser}) could not start ({exc.strerror or exc}), so the page was not photographed",
            )
        image = out.read_bytes() if out.is_file() else b""
        if done.returncode != 0 or not image.startswith(PNG_SIGNATURE):
            last = (done.stderr or b"").decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
            return None, (
                f"Chromium ({browser}) failed (exit {done.returncode}: {last[0][:200]}), so the page was not photographed"
            )
        return image, ""

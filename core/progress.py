"""Progress of long work, shown in two places at once: a tqdm bar on a terminal (none when standard
error is redirected, so logs hold no ``\r``), and the :class:`~core.models.Job` row a page polls,
each update a short write of its own, a few a second.

The step a :class:`Progress` reports goes to ``job.result["step"]``, under the Job's title while it
runs. A task that knows a file by another name than its server path sets ``job.shown_names``
(``{text on the server: name to show}``, not stored), read by :func:`shown`.
"""

from __future__ import annotations

import re
import sys
import time


def shown(job, text: str) -> str:
    """``text`` with every server-side name in ``job.shown_names`` replaced by the name the user knows."""
    names = {server: name for server, name in getattr(job, "shown_names", {}).items() if server}
    if not names:
        return text
    # One pass, longest first: a path is replaced whole, never its file name inside it.
    pattern = re.compile("|".join(re.escape(server) for server in sorted(names, key=len, reverse=True)))
    return pattern.sub(lambda match: names[match.group(0)], text)


def _on_terminal() -> bool:
    """Whether tqdm's stream (standard error) is a terminal a bar can redraw in place."""
    stream = sys.stderr
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):  # a replaced or closed stream
        return False


class Progress:
    """Report ``done`` out of ``total`` units to a tqdm bar and/or a Job row."""

    def __init__(
        self,
        description: str,
        total: int | None = None,
        unit: str = "it",
        job=None,
        bar: bool = True,
        unit_scale: bool = False,
        done: int = 0,
    ) -> None:
        """``done``: the amount already done when the step begins (a step of several, shown as one count)."""
        self.description = description
        self.total = total
        self.job = job
        self._done = done
        self._last_saved = 0.0
        self._bar = None
        if bar and _on_terminal():
            from tqdm import tqdm

            self._bar = tqdm(total=total, initial=done, desc=description, unit=unit, unit_scale=unit_scale, leave=False)
        if job is not None:
            job.result = {**(job.result or {}), "step": shown(job, description)[:500]}
            job.total = total
            job.done = done
            job.status = job.Status.RUNNING
            job.save(update_fields=["result", "total", "done", "status", "updated"])

    def update_to(self, done: int) -> None:
        """Set the absolute amount done (readers report byte positions)."""
        if self._bar is not None:
            self._bar.update(done - self._done)
        self._done = done
        if self.job is not None and time.monotonic() - self._last_saved > 0.5:
            self._last_saved = time.monotonic()
            self.job.done = done
            self.job.save(update_fields=["done", "updated"])

    @property
    def done(self) -> int:
        return self._done

    def advance(self, amount: int = 1) -> None:
        self.update_to(self._done + amount)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        if self.job is not None:
            self.job.done = self.total if self.total is not None else self._done
            self.job.save(update_fields=["done", "updated"])

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

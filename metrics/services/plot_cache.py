"""A report's plots drawn once: each figure is kept as a file, shared by every worker.

A report never changes after it is built, so a figure of it — its kind and parameters — is
the same on every view. The first request draws it (:mod:`metrics.plots`) and writes it
atomically under ``CACHE_DIR/plots/<report id>/``; later requests, from any worker, serve the
file. The key holds the report's id and creation time (a report deleted and built again under
the same name gets new files), the kind, the parameters as asked, the software version (a
new release draws again) and :data:`metrics.plots.DRAWING`, the version of how figures are drawn
(a change of the drawing code draws again even where the software version stays the same, as in a
deployment without git). Only a figure that was drawn is stored: a request with bad parameters
is refused before anything is written. The key doubles as the response's ETag.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path

from core.files import atomic_write_bytes
from core.services.storage import cache_dir
from core.version import software_version

from ..models import Report


def plot_key(report: Report, kind: str, params: Mapping[str, str]) -> str:
    """The figure's identity: report, kind, parameters, software version and drawing version, hashed."""
    from ..plots import DRAWING

    identity = [report.pk, report.created.isoformat(), kind, sorted(params.items()), software_version(), DRAWING]
    return hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:32]


def plot_path(report: Report, key: str, suffix: str) -> Path:
    return cache_dir("plots", str(report.pk)) / f"{key}.{suffix}"


def cached_plot(
    report: Report, kind: str, params: Mapping[str, str], suffix: str, draw: Callable[[], bytes]
) -> tuple[Path, str]:
    """The figure's file (drawn by ``draw`` if no worker drew it yet) and its key.

    ``draw`` validates the parameters and raises for bad ones; nothing is written then.
    """
    key = plot_key(report, kind, params)
    path = plot_path(report, key, suffix)
    if not path.exists():
        data = draw()
        atomic_write_bytes(path, data)  # a page inlines the file: never a name over a half-written file
    return path, key


def drawn_plot(report: Report, kind: str, params: Mapping[str, str], suffix: str) -> tuple[bytes, str] | None:
    """The figure's bytes and key if any worker drew it already, else ``None``: a page shows a drawn
    figure in its own HTML and leaves one never drawn to its own request, which draws it."""
    key = plot_key(report, kind, params)
    try:
        return plot_path(report, key, suffix).read_bytes(), key
    except OSError:  # never drawn, or unreadable: the page leaves it to its own request
        return None


def png_size(report: Report, kind: str, params: Mapping[str, str]) -> tuple[int, int] | None:
    """Width and height in pixels of a drawn PNG figure (its header's first chunk), else ``None``."""
    try:
        with plot_path(report, plot_key(report, kind, params), "png").open("rb") as file:
            header = file.read(24)
    except OSError:
        return None
    if len(header) < 24 or header[12:16] != b"IHDR":
        return None
    return int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")

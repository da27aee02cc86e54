"""A report's plots drawn once: each figure is kept as a file under ``CACHE_DIR/plots/<report id>/``, shared by
every worker (a report never changes after it is built). The first request draws it; a request with bad parameters
is refused before anything is written. The key (:func:`plot_key`) doubles as the response's ETag. The files are
bounded (``PLOT_CACHE_MAX_BYTES``, :func:`evict`): an evicted figure is drawn again when next asked for.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path

from core.errors import ServiceError
from core.services.storage import cache_dir
from core.version import software_version
from genderbias.files.atomic import atomic_write_bytes
from genderbias.numbers import NumberError, parse_count
from genderbias.ranking.defaults import MAX_CUTOFF

from ..models import Report

#: The figures' parameters that are whole numbers: keyed by their value.
NUMBER_PARAMETERS = frozenset({"cutoff"})


class PlotParameterError(ServiceError):
    """A figure's parameter that is not what it must be; ``field`` names it (the view's 400)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field


def normalised(params: Mapping[str, str]) -> dict[str, str | int]:
    """The parameters as values, not as typed: text stripped, numbers read (``010`` is 10; not ASCII digits, such as
    ``١٠`` or ``1_0``: :class:`PlotParameterError` naming the field), so one figure has one key."""
    values: dict[str, str | int] = {}
    for field, raw in params.items():
        if field in NUMBER_PARAMETERS:
            try:
                values[field] = parse_count(raw, field, maximum=MAX_CUTOFF)
            except NumberError as exc:
                raise PlotParameterError(field, exc.problem) from None
        else:
            values[field] = raw.strip()
    return values


def plot_key(report: Report, kind: str, params: Mapping[str, str]) -> str:
    """The figure's identity, hashed: the report's id and creation time (a report built again under its name gets
    new files), kind, parameters (:func:`normalised`), software version and :data:`metrics.plots.DRAWING`."""
    from ..plots import DRAWING

    values = sorted(normalised(params).items())
    identity = [report.pk, report.created.isoformat(), kind, values, software_version(), DRAWING]
    return hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:32]


def plot_path(report: Report, key: str, suffix: str) -> Path:
    return cache_dir("plots", str(report.pk)) / f"{key}.{suffix}"


def cached_plot(
    report: Report, kind: str, params: Mapping[str, str], suffix: str, draw: Callable[[], bytes]
) -> tuple[Path, str]:
    """The figure's file (drawn by ``draw`` if no worker drew it yet; ``draw`` raises for bad parameters, and
    nothing is written then) and its key."""
    key = plot_key(report, kind, params)
    path = plot_path(report, key, suffix)
    if not path.exists():
        data = draw()
        atomic_write_bytes(path, data)  # a page inlines the file: never a name over a half-written file
        evict(keep=path)
    return path, key


def evict(max_bytes: int | None = None, keep: Path | None = None, folder: str = "plots") -> int:
    """Delete the least recently written files of the cache ``folder`` (the figures' by default) until it
    holds at most ``max_bytes`` (default ``PLOT_CACHE_MAX_BYTES``), never ``keep`` (the one just written);
    returns how many. A file another worker deletes first is skipped."""
    from django.conf import settings

    limit = settings.PLOT_CACHE_MAX_BYTES if max_bytes is None else max_bytes
    files = []
    for path in cache_dir(folder).rglob("*"):
        try:
            stat = path.stat()
        except OSError:
            continue
        if path.is_file() and not path.name.startswith("."):  # not a file another worker is writing
            files.append((stat.st_mtime, stat.st_size, path))
    over = sum(size for _, size, _ in files) - limit
    deleted = 0
    for _, size, path in sorted(files):
        if over <= 0:
            break
        if path == keep:
            continue
        try:
            path.unlink()
        except OSError:
            continue
        over -= size
        deleted += 1
    return deleted


def drawn_plot(report: Report, kind: str, params: Mapping[str, str], suffix: str) -> tuple[bytes, str] | None:
    """The figure's bytes and key if any worker drew it already, else ``None`` (left to its own request)."""
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

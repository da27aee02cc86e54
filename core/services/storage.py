"""Folders for derived files under ``settings.CACHE_DIR``, created on first use.

Every partly written file lives in the one staging folder, so a crash leaves nothing half-written
anywhere else and :func:`clean_staging` can remove what an interrupted process left.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from django.conf import settings

#: Staging files older than this are taken to be left by a dead process.
STALE_STAGING_SECONDS = 6 * 3600


def cache_dir(*parts: str) -> Path:
    """A folder under ``settings.CACHE_DIR`` for derived files, created on first use."""
    path = Path(settings.CACHE_DIR).joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def staging_path(name: str) -> Path:
    """A path in the staging folder for a file being built; the caller moves or removes it. Named by
    the process id, so a dead process's files are told apart, and removed here first."""
    clean_staging(max_age=None)
    return cache_dir("staging") / f"{os.getpid()}-{name}"


def clean_staging(max_age: float | None = STALE_STAGING_SECONDS) -> int:
    """Remove staging files whose process is gone (or, with ``max_age``, that are older); returns how many."""
    folder = Path(settings.CACHE_DIR) / "staging"
    if not folder.is_dir():
        return 0
    removed = 0
    now = time.time()
    for path in folder.iterdir():
        pid = path.name.split("-", 1)[0]
        alive = pid.isdigit() and process_alive(int(pid))
        if not alive or (max_age is not None and now - path.stat().st_mtime > max_age):
            path.unlink(missing_ok=True)
            removed += 1
    return removed


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists on this host (someone else's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True

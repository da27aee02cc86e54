"""The software's version, as reports record it and as the shared caches key what the code computed,
read once per process: a deployment restarts its processes, so a cached figure computed by the old
code is never served by the new (:func:`code_key`).
"""

from __future__ import annotations

import functools
import hashlib
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def software_version() -> str:
    """``genderbias <version>`` plus the git commit when the code runs from a checkout."""
    try:
        version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        version = "unknown"
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"genderbias {version}" + (f" ({commit})" if commit else "")


@functools.cache
def code_key() -> str:
    """A short, cache-key-safe digest of :func:`software_version` (letters and digits only)."""
    return hashlib.sha256(software_version().encode()).hexdigest()[:12]

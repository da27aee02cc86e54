"""Atomic file writing, the one way the project writes files people or programs read.

Write a temporary file beside the target, then ``os.replace`` it over the target: a
reader never sees half a file, and an interruption leaves the previous version (or
nothing) in place. Pure module (no Django).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; moved over ``path`` if the block succeeds.

    The result is readable by others (0644) like a normally created file, not 0600 as
    ``mkstemp`` makes it. The temporary file is removed if the block raises.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write(path: str | os.PathLike, write: Callable[[IO[str]], None], newline: str | None = None) -> Path:
    """Call ``write(handle)`` on a UTF-8 text file that replaces ``path`` only once complete."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline=newline) as handle:
        write(handle)
        handle.flush()
        os.fsync(handle.fileno())
    return Path(path)

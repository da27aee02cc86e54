"""Atomic file writing, the one way the project writes files people or programs read, and the one streaming hash.

A temporary file beside the target is ``os.replace``-d over it: a reader never sees half a file, and an
interruption leaves the previous version (or nothing). Folders are swapped the same way (:func:`replace_folder`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

__all__ = [
    "atomic_path", "atomic_write", "atomic_write_bytes", "check_writable", "file_sha256", "replace_folder",
    "write_parquet_atomic",
]  # fmt: skip


def check_writable(path: str | os.PathLike) -> Path:
    """Fail early, naming the path, when ``path`` cannot be written: its folder must exist, since folders are never
    created on the fly (a typo is an error, not a new folder). Commands call this before long work."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise FileNotFoundError(f"cannot write {target}: the folder {folder} does not exist")
    if target.is_dir():
        raise IsADirectoryError(f"cannot write {target}: it is a folder")
    if not os.access(folder, os.W_OK):
        raise PermissionError(f"cannot write {target}: the folder {folder} is not writable")
    return target


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path beside ``path``, moved over it (made 0644, not ``mkstemp``'s 0600) if the block succeeds,
    removed if it raises."""
    target = Path(path)
    check_writable(target)
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


def file_sha256(path: str | os.PathLike, block_size: int = 8 * 1024 * 1024) -> str:
    """SHA-256 of a file's bytes, read in blocks (flat memory whatever the file's size)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(block_size), b""):
            digest.update(block)
    return digest.hexdigest()


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """``data`` as the file ``path``, which readers never see half-written, even after a crash."""
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    return Path(path)


def write_parquet_atomic(frame, path: str | os.PathLike, compression: str = "zstd") -> Path:
    """Write a polars frame as a Parquet file that readers never see half-written
    (``compression``: polars' codec; lz4 writes in a third of zstd's time, as fast to read)."""
    with atomic_path(path) as tmp:
        frame.write_parquet(tmp, compression=compression)
    return Path(path)


def replace_folder(staging: str | os.PathLike, target: str | os.PathLike, mode: int = 0o755) -> Path:
    """Put the complete folder ``staging`` (written beside ``target``, on the same file system) in the place of
    ``target``, whole or not at all; it gets ``mode`` (mkdtemp makes 0700).

    An existing ``target`` is first renamed onto a fresh empty folder of a unique name (POSIX ``rename`` replaces
    an empty folder atomically, and a crash's leftover never collides); if ``staging`` then cannot take its place,
    the old folder is renamed back, else deleted. A symbolic link as ``target`` is refused (``IsADirectoryError``),
    never replaced: the caller decides, naming the folder it points to.
    """
    staging, target = Path(staging), Path(target)
    if target.is_symlink():
        raise IsADirectoryError(f"{target} is a symbolic link (to {os.path.realpath(target)}); not replaced")
    staging.chmod(mode)
    if not target.exists():
        os.rename(staging, target)
        return target
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    try:
        os.rename(target, old)  # onto the empty folder just made: atomic, and no name is shared
    except BaseException:
        old.rmdir()
        raise
    try:
        os.rename(staging, target)
    except BaseException:
        os.rename(old, target)  # roll back: the previous folder, as it was
        raise
    shutil.rmtree(old, ignore_errors=True)
    return target

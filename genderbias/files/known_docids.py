"""The docids of a collection that a run's lines are checked against, and its sorted index saved as
Parquet between processes (:func:`save_known_index`, :func:`load_known_index`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

from genderbias.files.atomic import atomic_path

#: The Parquet metadata field of a saved :class:`KnownDocids` index: what it was built from.
KNOWN_INDEX_SOURCE = "pooling.known_docids.source"


class KnownDocids:
    """A collection's docids, for checking runs against: which of a run's docids it holds.

    Built once (each docid beside its 8-byte hash, sorted by hash) and shared by every run
    of the collection read in one process. A check sorts the run's docids by hash and joins
    the two sorted frames (a merge, not a hash table of the whole collection built again per
    run), then compares the strings of the pairs found, so the answer is exact. ``docids`` may be
    a function giving them: then they are read at the first check, so a command that finds every
    run already imported never reads the collection.

    ``saved``: a file to keep the sorted index in between processes (a user importing seven
    runs types seven commands; hashing and sorting a million docids each time was 0.17 s CPU of
    each run's 0.55 s of work, start-up aside; loading them takes 0.04 s). ``source`` names what the docids are (the collection's content hash and
    size) and ``rows`` how many there are; the file is used only if it carries that same source,
    this polars version's hash (:func:`known_index_source`), the same number of rows and hashes in
    order. A missing, unreadable, corrupt or foreign file is rebuilt from ``docids``, never
    trusted; a file that cannot be written is only a lost saving.
    """

    def __init__(
        self,
        docids: pl.Series | Callable[[], pl.Series],
        *,
        saved: Path | None = None,
        source: str = "",
        rows: int | None = None,
    ) -> None:
        self._docids = docids
        self._saved, self._source, self._rows = saved, known_index_source(source), rows

    @functools.cached_property
    def _index(self) -> pl.DataFrame:
        if self._saved is not None:
            index = load_known_index(self._saved, self._source, self._rows)
            if index is not None:
                self._docids = None
                return index
        docids = (self._docids() if callable(self._docids) else self._docids).cast(pl.String)
        self._docids = None
        index = pl.DataFrame({"hash": docids.hash(seed=0), "known": docids}).sort("hash")
        if self._saved is not None and (self._rows is None or index.height == self._rows):
            with contextlib.suppress(OSError, pl.exceptions.PolarsError):  # a lost saving, not a failed import
                save_known_index(index, self._saved, self._source)
        return index

    def __len__(self) -> int:
        return self._index.height

    def contains(self, docids: pl.Series) -> np.ndarray:
        """A boolean per docid: whether the collection holds it."""
        found = np.zeros(len(docids), dtype=bool)
        probe = pl.DataFrame({"row": np.arange(len(docids)), "hash": docids.hash(seed=0), "docid": docids}).sort("hash")
        pairs = probe.join(self._index, on="hash", how="inner")  # a hash shared by two docids gives both pairs
        found[pairs.filter(pl.col("docid") == pl.col("known"))["row"].to_numpy()] = True
        return found


def known_index_source(source: str) -> str:
    """What a saved index must carry: its docids' ``source`` and the hash that sorted them
    (polars' hash is stable within a version, not across versions)."""
    return f"{source}; polars {pl.__version__} hash seed 0"


def save_known_index(index: pl.DataFrame, path: Path, source: str) -> None:
    """Write a :class:`KnownDocids` index (``hash, known``, sorted by hash) atomically, marked with its ``source``."""
    with atomic_path(path) as tmp:
        index.write_parquet(tmp, compression="lz4", metadata={KNOWN_INDEX_SOURCE: source})


def load_known_index(path: Path, source: str, rows: int | None = None) -> pl.DataFrame | None:
    """The index :func:`save_known_index` wrote to ``path`` for ``source``, or ``None`` when the
    file is missing, unreadable, of another source, of another shape or out of order."""
    try:
        if pl.read_parquet_metadata(path).get(KNOWN_INDEX_SOURCE) != source:
            return None
        index = pl.read_parquet(path)
    except Exception:  # a missing or damaged cache file is rebuilt, whatever polars raises
        return None
    if index.schema != pl.Schema({"hash": pl.UInt64, "known": pl.String}) or index["known"].null_count():
        return None
    if (rows is not None and index.height != rows) or not index["hash"].is_sorted():
        return None
    return index.with_columns(pl.col("hash").set_sorted())

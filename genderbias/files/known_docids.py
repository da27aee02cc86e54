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

__all__ = ["KnownDocids", "known_index_source", "load_known_index", "plain_integers", "save_known_index"]

#: The Parquet metadata field of a saved :class:`KnownDocids` index: what it was built from.
KNOWN_INDEX_SOURCE = "pooling.known_docids.source"


class KnownDocids:
    """A collection's docids, for checking which of a run's docids it holds: built once (docids sorted by 8-byte
    hash) and merged with each run's, the strings of the pairs found compared, so the answer is exact. ``docids``
    may be a function, read at the first check (a command that finds every run imported never reads them).

    ``saved``: a file keeping the sorted index between processes (one command per run; timings:
    docs/benchmarks.md); used only if it carries the same ``source`` (the collection's content hash and size) and
    polars hash (:func:`known_index_source`), ``rows`` rows and hashes in order; otherwise rebuilt, never trusted;
    an unwritable file is only a lost saving. Docids that are all plain integers (MS MARCO v1's passages) are held
    as a table by value instead (:func:`plain_integers`), exact with no hash, sort or join, and not saved.
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
    def _index(self) -> pl.DataFrame | np.ndarray:
        """The hash index (``hash, known``), or for plain integer docids a table of which values are held."""
        if self._saved is not None:
            index = load_known_index(self._saved, self._source, self._rows)
            if index is not None:
                self._docids = None
                return index
        docids = (self._docids() if callable(self._docids) else self._docids).cast(pl.String)
        self._docids = None
        held = _held_values(docids)
        if held is not None:
            return held
        index = pl.DataFrame({"hash": docids.hash(seed=0), "known": docids}).sort("hash")
        if self._saved is not None and (self._rows is None or index.height == self._rows):
            with contextlib.suppress(OSError, pl.exceptions.PolarsError):  # a lost saving, not a failed import
                save_known_index(index, self._saved, self._source)
        return index

    def contains(self, docids: pl.Series) -> np.ndarray:
        """A boolean per docid: whether the collection holds it."""
        if isinstance(self._index, np.ndarray):
            values = plain_integers(docids)
            found = (values >= 0) & (values < len(self._index))
            found[found] = self._index[values[found]]
            return found
        found = np.zeros(len(docids), dtype=bool)
        probe = pl.DataFrame({"row": np.arange(len(docids)), "hash": docids.hash(seed=0), "docid": docids}).sort("hash")
        pairs = probe.join(self._index, on="hash", how="inner")  # a hash shared by two docids gives both pairs
        found[pairs.filter(pl.col("docid") == pl.col("known"))["row"].to_numpy()] = True
        return found


#: The most bytes a table by value may take per docid held (beyond a first MiB): sparse values keep the hash index.
_TABLE_BYTES_PER_DOCID = 8


def plain_integers(docids: pl.Series) -> np.ndarray:
    """Each docid's value when it is a non-negative integer written plainly (ASCII digits, no sign, no leading
    zero: ``"7"``, never ``"07"`` or ``"+7"``), else -1: such texts and their values correspond one to one."""
    text = pl.col("docid")
    signed = text.str.starts_with("+") | text.str.starts_with("-")
    padded = text.str.starts_with("0") & (text.str.len_bytes() > 1)
    value = pl.when(~signed & ~padded).then(text.str.to_integer(base=10, strict=False))
    return pl.DataFrame({"docid": docids}).select(value.fill_null(-1)).to_series().to_numpy()


def _held_values(docids: pl.Series) -> np.ndarray | None:
    """A table by value (``table[v]``: the docid ``str(v)`` is held) when every docid is a plain integer
    and the table is small beside them; else ``None``."""
    if not len(docids):
        return None
    values = plain_integers(docids)
    if values.min() < 0 or values.max() >= _TABLE_BYTES_PER_DOCID * len(docids) + (1 << 20):
        return None
    table = np.zeros(int(values.max()) + 1, dtype=bool)
    table[values] = True
    return table


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

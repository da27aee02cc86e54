"""Texts read by docid, never the whole collection: the one reader of texts by id, and MS MARCO v2's own files.

A *docstore* is anything with ``get_many(ids) -> {docid: document}``: an ``ir_datasets`` docstore or
:class:`V2PassageFiles`. :func:`read_texts` is how the library (:class:`genderbias.api.inputs.Texts`) and the
platform (a collection registered by reference) read texts: only the docids asked for, in batches, so a bias
figure costs what the runs retrieve. What was read is pinned by :func:`checksum_of_texts`, the same wherever and
whenever the same texts are read.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from genderbias.errors import InputError
from genderbias.files.textfiles import GZIP_MAGIC, bounded_line, expanded, open_regular

if TYPE_CHECKING:
    import numpy as np
    import polars as pl

__all__ = ["V2_DOCID", "V2PassageFiles", "checksum_of_texts", "read_texts", "text_schema"]

# polars is imported inside the functions: the platform's commands import this module at start-up
# (a collection by reference is read through it), and most of them never read a text.

#: An MS MARCO v2 passage id: ``msmarco_passage_<bundle>_<byte offset in the uncompressed bundle>``.
V2_DOCID = re.compile(r"^msmarco_passage_(\d+)_(\d+)$")
#: A v2 bundle file: ``msmarco_passage_<bundle>`` (JSON lines, as ir_datasets extracts it) or its ``.gz``.
V2_BUNDLE = re.compile(r"^msmarco_passage_(\d+)(\.gz)?$")
#: ir_datasets' index beside a bundle: 4 bytes a passage (:meth:`V2PassageFiles.passages`).
V2_POS = re.compile(r"^msmarco_passage_(\d+)\.pos$")
#: Bytes of each end of a bundle file that its fingerprint reads (:meth:`V2PassageFiles.fingerprint`).
FINGERPRINT_BYTES = 1 << 16


class V2PassageFiles:
    """The passages of MS MARCO v2 in their own layout, read by docid (a docstore: :meth:`get_many`).

    ``folder`` holds the bundles ``msmarco_passage_00`` … ``_69``: JSON lines (``pid``, ``passage``, …) as
    ir_datasets extracts them, or the distribution's ``.gz``. A passage id names its bundle and the byte offset of
    its line, so a plain bundle is read by seeking; a gzipped one is decompressed up to the last offset asked (gunzip
    the bundles once for a pool's cost to follow the runs). The line found must carry the asked ``pid``: a changed
    file is an :class:`InputError`, never a wrong text. ``reads`` counts the passages read.

    Only the folder's own files are read: a bundle or ``.pos`` that is a link or not a regular file refuses the
    folder, and each is reopened through :func:`genderbias.files.textfiles.open_regular` on every read, so a link
    swapped in later is refused then. Lines are bounded as every reader's are.
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        if not self.folder.is_dir():
            raise InputError(self.folder, None, "no such folder")
        self.files: dict[str, Path] = {}
        for path in sorted(self.folder.iterdir()):
            match = V2_BUNDLE.match(path.name)
            if (match or V2_POS.match(path.name)) and not _regular(path):
                raise InputError(
                    path,
                    None,
                    "not a regular file with one name (a link?): bundles are read only as the folder's own files",
                )
            if match and not (match.group(2) and match.group(1) in self.files):
                self.files[match.group(1)] = path  # a plain bundle wins over its .gz
        if not self.files:
            raise InputError(self.folder, None, "no MS MARCO v2 bundle files (msmarco_passage_00 … _69) in it")
        self.reads = 0

    def fingerprint(self) -> tuple[str, int]:
        """``(sha256, total bytes)`` of the bundles' names, sizes and first and last 64 KiB: what
        registering reads (70 × 128 KiB for v2's 60 GB), enough to tell another corpus or a rewritten file."""
        digest, total = hashlib.sha256(), 0
        for bundle, path in sorted(self.files.items()):
            with open_regular(path) as file:
                size = os.fstat(file.fileno()).st_size
                total += size
                digest.update(f"{bundle}\t{path.name}\t{size}\n".encode())
                digest.update(file.read(FINGERPRINT_BYTES))
                file.seek(max(size - FINGERPRINT_BYTES, 0))
                digest.update(file.read(FINGERPRINT_BYTES))
        return digest.hexdigest(), total

    def passages(self) -> int | None:
        """The number of passages if every bundle has ir_datasets' ``.pos`` file beside it (4 bytes a passage), else None."""
        sizes = [self.folder / f"msmarco_passage_{bundle}.pos" for bundle in self.files]
        if not all(_regular(pos) for pos in sizes):
            return None
        return sum(os.lstat(pos).st_size // 4 for pos in sizes)

    def contains(self, docids: pl.Series) -> np.ndarray:
        """A boolean per docid: whether it can name a passage here (the v2 id scheme, a bundle present, an
        offset inside a plain bundle). Whether a line starts there is known only when it is read."""
        import polars as pl

        parts = docids.cast(pl.String).str.extract_groups(V2_DOCID.pattern).struct.rename_fields(["bundle", "offset"])
        frame = parts.struct.unnest().with_columns(pl.col("offset").cast(pl.Int64, strict=False))
        sizes = {bundle: os.lstat(path).st_size for bundle, path in self.files.items() if path.suffix != ".gz"}
        known = pl.DataFrame(
            {"bundle": list(self.files), "size": [sizes.get(bundle) for bundle in self.files]},
            schema={"bundle": pl.String, "size": pl.Int64},
        )
        joined = frame.with_row_index("row").join(known, on="bundle", how="left", maintain_order="left")
        ok = pl.col("size").is_not_null() & (pl.col("offset") < pl.col("size"))
        gz = pl.col("bundle").is_in([b for b in self.files if b not in sizes])
        held = (ok | (gz & pl.col("offset").is_not_null())).fill_null(False).alias("held")
        return joined.select(held)["held"].to_numpy()

    def get_many(self, ids: Iterable[str]) -> dict[str, str]:
        """``{docid: passage}`` of those ``ids`` that name a passage (others are left out, as ir_datasets does)."""
        by_bundle: dict[str, list[tuple[int, str]]] = {}
        for docid in ids:
            match = V2_DOCID.match(docid)
            if match and match.group(1) in self.files:
                by_bundle.setdefault(match.group(1), []).append((int(match.group(2)), docid))
        found: dict[str, str] = {}
        for bundle, wanted in sorted(by_bundle.items()):
            wanted.sort()
            path = self.files[bundle]
            lines = _lines_at_gzip(path, wanted) if path.suffix == ".gz" else _lines_at(path, wanted)
            for (offset, docid), line in zip(wanted, lines, strict=True):
                if line is None:
                    continue
                try:
                    record = json.loads(line)
                    pid, passage = record["pid"], record["passage"]
                except (ValueError, KeyError, TypeError):
                    raise InputError(
                        path, None, f"byte {offset} (passage {docid}): not a passage's JSON line"
                    ) from None
                if pid != docid:
                    raise InputError(
                        path, None, f"byte {offset} holds passage {pid!r}, not {docid!r}: the file changed"
                    )
                found[docid] = passage
                self.reads += 1
        return found


def _regular(path: Path) -> bool:
    """Whether ``path`` itself (not a link's target) is a regular file with one name (what
    :func:`genderbias.files.textfiles.open_regular` opens)."""
    try:
        status = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(status.st_mode) and status.st_nlink == 1


def _where(offset: int, docid: str | None) -> str:
    """Where a line is, for an error: its byte offset and the passage asked there."""
    return f"byte {offset}" + (f" (passage {docid})" if docid else "")


def _lines_at(path: Path, wanted: list[tuple[int, str]]) -> list[bytes | None]:
    """The line starting at each offset of a plain file (offsets sorted), by seeking; each line bounded."""
    lines: list[bytes | None] = []
    with open_regular(path) as file:
        size = os.fstat(file.fileno()).st_size
        for offset, docid in wanted:
            if offset >= size:
                lines.append(None)
                continue
            file.seek(offset)
            lines.append(bounded_line(file, path, _where(offset, docid)))
    return lines


def _lines_at_gzip(path: Path, wanted: list[tuple[int, str]]) -> list[bytes | None]:
    """The line at each offset of a gzipped file's uncompressed bytes (offsets sorted), read from the start (gzip
    cannot seek) through the one gzip reader, a bounded line at a time."""
    found: dict[int, bytes] = {}
    targets = {offset: docid for offset, docid in wanted}
    last = wanted[-1][0] if wanted else -1
    position = 0
    with open_regular(path) as raw:
        if raw.read(2) != GZIP_MAGIC:
            raise InputError(path, None, "not a gzip file, though its name ends in .gz")
        raw.seek(0)
        stream = expanded(path, raw)
        while position <= last and (line := bounded_line(stream, path, _where(position, targets.get(position)))):
            if position in targets:
                found[position] = line
            position += len(line)
    return [found.get(offset) for offset, _ in wanted]


def read_texts(store: Any, docids: Iterable[str] | pl.Series, batch: int = 50_000) -> pl.DataFrame:
    """``docid, text`` of those of ``docids`` that ``store`` holds, asked ``batch`` at a time."""
    import polars as pl

    wanted = pl.Series("docid", docids, dtype=pl.String).unique(maintain_order=True).to_list()
    parts = []
    for start in range(0, len(wanted), batch):
        found = store.get_many(wanted[start : start + batch])
        rows = [(str(docid), _text_of(document)) for docid, document in found.items()]
        parts.append(pl.DataFrame(rows, schema=text_schema(), orient="row"))
    return pl.concat(parts) if parts else pl.DataFrame(schema=text_schema())


def text_schema() -> dict:
    """``docid, text``, both strings: the frame :func:`read_texts` gives."""
    import polars as pl

    return {"docid": pl.String, "text": pl.String}


def _text_of(document: Any) -> str:
    """An ir_datasets document's text: the ``text`` field, else its ``default_text()``."""
    if isinstance(document, str):
        return document
    if hasattr(document, "text"):
        return document.text
    return document.default_text()


def text_digests(texts: pl.DataFrame) -> pl.DataFrame:
    """``docid, digest``: the SHA-256 (first 128 bits, hex) of each text's UTF-8 bytes."""
    import polars as pl

    digests = [hashlib.sha256(text.encode()).hexdigest()[:32] for text in texts["text"].to_list()]
    return pl.DataFrame({"docid": texts["docid"], "digest": pl.Series(digests, dtype=pl.String)})


def checksum_of_texts(texts: pl.DataFrame) -> str:
    """One SHA-256 of ``docid<TAB>digest`` lines (:func:`text_digests`) in docid order: the checksum of
    ``docid, text`` read, independent of the order or the batches they were read in."""
    import polars as pl

    ordered = text_digests(texts).unique("docid").sort("docid")
    lines = ordered.select(pl.concat_str("docid", "digest", separator="\t"))["docid"].to_list()
    return hashlib.sha256(("\n".join(lines) + "\n").encode()).hexdigest()

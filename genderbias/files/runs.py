"""TREC and MS MARCO run files parsed, checked and ranked (``read_run`` = ``parse_run_lines`` + ``finish_run``).

Bad input is an :class:`InputError` naming the file, line and problem. A regular file is read by polars'
columnar reader (:func:`read_regular_run`); any other in large blocks (:mod:`genderbias.files.blocks`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from genderbias.errors import InputError, Skipped, raise_or_skip
from genderbias.files.blocks import BLOCK_SIZE, UTF8_BOM, iter_blocks
from genderbias.files.known_docids import KnownDocids
from genderbias.files.runformats import RUN_FORMATS, RUN_ORDERS
from genderbias.files.textfiles import (
    DECOMPRESSED,
    GZIP_MAGIC,
    MAX_LINE_BYTES,
)

__all__ = [
    "RunTable", "check_run_file", "finish_run", "parse_run_lines", "read_regular_run", "read_run", "scan_run_bytes",
]  # fmt: skip

_RUN_LINES = {
    "trec": (r"^\s*(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$", ["qid", "q0", "docid", "rank", "score", "tag"]),
    "msmarco": (r"^\s*(\S+)\s+(\S+)\s+(\S+)\s*$", ["qid", "docid", "rank"]),
}
_RUN_EXPECTED = {"trec": "6 columns (qid Q0 docid rank score tag)", "msmarco": "3 columns (qid docid rank)"}


#: The columns :func:`parse_run_lines` gives, one row per valid line.
RUN_FIELDS = {"line": pl.Int64, "qid": pl.String, "docid": pl.String, "score": pl.Float64}


@dataclass
class RunTable:
    """A validated run: ``frame`` has ``qid, docid, rank (1-based), score``, grouped by query.

    ``interleaved_queries``: queries whose lines came in several blocks (gathered at their first). An MS MARCO
    run has no score, so ``score`` is minus the file's rank. ``in_score_order``: the file (queries gathered) is
    already by score within each query. ``reordered_ties``: queries whose order trec_eval's tie rule changed.
    """

    frame: pl.DataFrame
    queries: int
    reordered_ties: int
    reordered_rows: int
    interleaved_queries: int = 0
    format: str = "trec"
    in_score_order: bool = False


def detect_run_format(path: str | Path) -> str:
    """``trec`` or ``msmarco`` from the column count of the first non-blank line."""
    path = Path(path)
    for lines, _ in iter_blocks(path, block_size=64 * 1024):
        for line, text in lines.iter_rows():
            columns = len(text.split())
            if columns == 0:
                continue
            if columns == 6:
                return "trec"
            if columns == 3:
                return "msmarco"
            raise InputError(
                path, line, f"found {columns} columns: expected 6 (qid Q0 docid rank score tag) or 3 (qid docid rank)"
            )
    raise InputError(path, None, "the run is empty")


def _score_orders(frame: pl.DataFrame) -> tuple[np.ndarray, np.ndarray, bool]:
    """Row orders by score within each block: ties in file order, and ties by docid descending (trec_eval's), and
    whether the rows were already in the first (:attr:`RunTable.in_score_order`: then its sort is skipped). Only
    the rows inside tie groups are sorted by docid, never the whole run on strings.
    """
    block, score, line = frame["block"].to_numpy(), frame["score"].to_numpy(), frame["line"].to_numpy()
    same_block, same_score = block[1:] == block[:-1], score[1:] == score[:-1]
    in_order = (block[1:] > block[:-1]) | (
        same_block & ((score[1:] < score[:-1]) | (same_score & (line[1:] > line[:-1])))
    )  # each row after the one before it in (block, score descending, line)
    in_score_order = bool(in_order.all())
    if in_score_order:
        stable = np.arange(len(block))
    else:
        stable = (
            frame.select(pl.arg_sort_by(["block", "score", "line"], descending=[False, True, False]))
            .to_series()
            .to_numpy()
        )
        block, score = block[stable], score[stable]
    same_as_previous = np.r_[False, (block[1:] == block[:-1]) & (score[1:] == score[:-1])]
    tied = same_as_previous | np.r_[same_as_previous[1:], False]
    trec = stable.copy()
    if tied.any():
        slots = np.flatnonzero(tied)
        # A tied row starts its group unless it ties the row before: groups numbered over the tied rows alone.
        group = np.cumsum(~same_as_previous[slots])
        ties = pl.DataFrame({"slot": slots, "group": group, "docid": frame["docid"].gather(stable[slots])})
        reordered = ties.sort(["group", "docid"], descending=[False, True])["slot"].to_numpy()
        trec[slots] = stable[reordered]
    return stable, trec, in_score_order


def _ranks(block: np.ndarray) -> np.ndarray:
    """1, 2, … within each run of equal values of ``block`` (rows grouped by block)."""
    starts = np.r_[True, block[1:] != block[:-1]]
    index = np.arange(len(block), dtype=np.int32)
    return index - np.maximum.accumulate(np.where(starts, index, 0)) + 1


def _repeated_pairs(fields: pl.DataFrame) -> pl.DataFrame:
    """Rows whose (qid, docid) occurred on an earlier line, sorted by line: found by sorting an 8-byte hash key per
    pair (not a window over the strings), only rows whose key repeats compared exactly."""
    qids = fields["qid"].hash(seed=0).to_numpy()
    keys = fields["docid"].hash(seed=0).to_numpy() ^ (qids * np.uint64(0x9E3779B97F4A7C15))
    ordered = pl.Series(keys).sort().to_numpy()
    repeated = np.unique(ordered[1:][ordered[1:] == ordered[:-1]])
    if not len(repeated):
        return fields.clear()
    candidates = fields.filter(pl.Series(np.isin(keys, repeated)))
    first = pl.col("line").min().over("qid", "docid")
    return candidates.filter(pl.col("line") != first).sort("line")


#: Any whitespace but a lone space between fields: such a block takes the general pattern.
_IRREGULAR_SPACE = r"\s\s|^\s|\s$|[^\S ]"


def _split_plain_lines(lines: pl.DataFrame, columns: list[str]) -> pl.DataFrame | None:
    """The fields of every line when each has exactly ``len(columns)`` fields one space apart and no other
    whitespace (as run files are written), split faster than :data:`_RUN_LINES`' pattern; otherwise ``None``."""
    text = pl.col("text")
    irregular = lines.select(
        (text.str.count_matches(" ", literal=True) != len(columns) - 1).any()
        | text.str.contains(_IRREGULAR_SPACE).any()
    ).item()
    if irregular:
        return None
    return lines.select(
        "line", text.str.split_exact(" ", len(columns) - 1).struct.rename_fields(columns).alias("f")
    ).unnest("f")


def _parse_run_block(
    path: Path, lines: pl.DataFrame, known: KnownDocids | None, skipped: Skipped | None, run_format: str = "trec"
) -> pl.DataFrame:
    """Validate one block of run lines, keeping ``line, qid, docid, score``. Ranks must be integers ≥ 0 and scores
    finite (trec_eval's ``atoi``/``atof`` would silently turn ``1.5`` into 1 and accept ``inf``)."""
    pattern, columns = _RUN_LINES[run_format]
    lines = lines.filter(pl.col("text").str.strip_chars() != "")
    fields = _split_plain_lines(lines, columns)
    if fields is None:
        fields = lines.select("line", pl.col("text").str.extract_groups(pattern).alias("f")).unnest("f")
        fields.columns = ["line", *columns]
    bad = fields.filter(pl.col("qid").is_null())
    for (line,) in bad.select("line").iter_rows():
        found = len(lines.filter(pl.col("line") == line)["text"][0].split())
        raise_or_skip(InputError(path, line, f"expected {_RUN_EXPECTED[run_format]}, found {found}"), skipped)
    fields = fields.filter(pl.col("qid").is_not_null())

    rank_value = pl.col("rank").cast(pl.Int64, strict=False)
    bad = fields.filter(rank_value.is_null())
    for line, rank in bad.select("line", "rank").iter_rows():
        raise_or_skip(InputError(path, line, f"rank {rank!r} is not an integer"), skipped)
    if len(bad):
        fields = fields.filter(rank_value.is_not_null())
    negative = fields.filter(rank_value < 0)  # a rank counts from 0 or 1, never below (issue 68)
    for line, rank in negative.select("line", "rank").iter_rows():
        raise_or_skip(InputError(path, line, f"rank {rank!r} is negative"), skipped)
    if len(negative):
        fields = fields.filter(rank_value >= 0)

    if run_format == "msmarco":
        fields = fields.with_columns((-rank_value).cast(pl.Float64).alias("score_value"))
    else:
        fields = fields.with_columns(pl.col("score").cast(pl.Float64, strict=False).alias("score_value"))
        unusable = pl.col("score_value").is_null() | ~pl.col("score_value").is_finite()
        bad = fields.filter(unusable)
        for line, score, value in bad.select("line", "score", "score_value").iter_rows():
            problem = "is not a number" if value is None or value != value else "is not finite"
            raise_or_skip(InputError(path, line, f"score {score!r} {problem}"), skipped)
        if len(bad):
            fields = fields.filter(~unusable)
    fields = fields.select("line", "qid", "docid", pl.col("score_value").alias("score"))
    return _keep_known(path, fields, known, skipped)


def read_run(
    path: str | Path,
    order: str = "score",
    known_docids: pl.Series | KnownDocids | None = None,
    skipped: Skipped | None = None,
    run_format: str = "auto",
    scanned: Callable[[], RunFileBytes] | None = None,
) -> RunTable:
    """Read a TREC (``qid Q0 docid rank score tag``) or MS MARCO (``qid docid rank``) run, any whitespace; a query's
    interleaved lines gathered at its first appearance, as trec_eval does. ``order="score"``: by score, ties by
    docid descending (trec_eval's rule); ``"file"``: the file's order, as the reference notebooks read it. Workers
    may split the two steps (:func:`parse_run_lines` on byte ranges, then :func:`finish_run`).
    """
    path, run_format = check_run_file(path, order, run_format)
    fields = parse_run_lines(path, run_format, known_docids, skipped, scanned=scanned)
    return finish_run(path, fields, order, skipped, run_format)


def check_run_file(path: str | Path, order: str, run_format: str) -> tuple[Path, str]:
    """The run's path and its format (``auto`` detected), after checking the options and the file."""
    if order not in RUN_ORDERS:
        raise ValueError(f"order must be one of {RUN_ORDERS}, got {order!r}")
    if run_format not in RUN_FORMATS:
        raise ValueError(f"run_format must be one of {RUN_FORMATS}, got {run_format!r}")
    path = Path(path)
    if not path.is_file():
        raise InputError(path, None, "no such file")
    if run_format == "auto":
        run_format = detect_run_format(path)
    return path, run_format


def parse_run_lines(
    path: Path,
    run_format: str,
    known_docids: pl.Series | KnownDocids | None = None,
    skipped: Skipped | None = None,
    byte_range: tuple[int, int] | None = None,
    first_line: int = 1,
    scanned: Callable[[], RunFileBytes] | None = None,
) -> pl.DataFrame:
    """Validated lines of a run (or of one ``byte_range`` of it, whose first line is the
    file's line ``first_line``): ``line, qid, docid, score``, in file order."""
    known = KnownDocids(known_docids) if isinstance(known_docids, pl.Series) else known_docids
    if byte_range is None:
        regular = read_regular_run(path, run_format, scanned)
        if regular is not None:
            return _keep_known(path, regular, known, skipped)
    blocks = iter_blocks(path, byte_range=byte_range, first_line=first_line)
    parts = [_parse_run_block(path, lines, known, skipped, run_format) for lines, _ in blocks]
    return pl.concat(parts) if parts else pl.DataFrame(schema=RUN_FIELDS)


#: ASCII whitespace other than the space, the newline and the carriage return (refused apart).
_ASCII_TABS = (b"\t", b"\x0b", b"\x0c")
#: The columns a run's fields are read as by the columnar reader (:func:`read_regular_run`).
_REGULAR_TYPES = {"qid": pl.String, "q0": pl.String, "docid": pl.String, "rank": pl.Int64, "score": pl.Float64}


@dataclass(frozen=True)
class RunFileBytes:
    """One pass over a run file's bytes: its SHA-256 (its cache name) and what the columnar reader cannot see: its
    lines with blank ones, a carriage return, whether it is ASCII without other whitespace than space and newline."""

    sha256: str
    lines: int
    carriage_return: bool
    ascii_spaces_only: bool


def scan_run_bytes(path: str | Path) -> RunFileBytes:
    """:class:`RunFileBytes` of a plain file, read once in blocks (flat memory). Mostly hashlib's and
    bytes' C loops: on a thread of its own it runs beside polars' parse (``import_run`` does so)."""
    digest = hashlib.sha256()
    newlines, last, carriage_return, ascii_spaces_only = 0, b"", False, True
    with open(path, "rb") as file:
        while block := file.read(BLOCK_SIZE):
            digest.update(block)
            newlines += block.count(b"\n")
            last = block[-1:]
            carriage_return = carriage_return or b"\r" in block
            # ASCII with no tab, vertical tab or form feed: no field needs the (slower) whitespace pattern.
            ascii_spaces_only = ascii_spaces_only and block.isascii() and not any(c in block for c in _ASCII_TABS)
    return RunFileBytes(digest.hexdigest(), newlines + (last not in (b"", b"\n")), carriage_return, ascii_spaces_only)


def read_regular_run(
    path: Path, run_format: str, scanned: Callable[[], RunFileBytes] | None = None
) -> pl.DataFrame | None:
    """``line, qid, docid, score`` of a plain run file whose every line is regular, read by polars' columnar CSV
    reader on every core; ``None`` when any line is not, or the file is gzipped (then :func:`parse_run_lines`
    reads it block by block, naming each bad line). ``scanned``: the file's :func:`scan_run_bytes`, if made beside.

    Regular, as run files are written: exactly the format's fields one space apart, no other whitespace, no blank
    line, UTF-8 without a byte-order mark, integer ranks, finite scores, lines under :data:`MAX_LINE_BYTES`. It
    then gives exactly what the block parser gives (``tests/pooling/test_run_reader_paths.py``) and never accepts a
    line the block parser would refuse; its speed: docs/benchmarks.md.
    """
    columns = _RUN_LINES[run_format][1]
    with open(path, "rb") as file:
        head = file.read(3)
    if head[:2] == GZIP_MAGIC or head == UTF8_BOM or not head:
        return None
    if path.stat().st_size > DECOMPRESSED.bytes:
        return None  # the block parser refuses it, naming the line reached
    schema = {name: _REGULAR_TYPES.get(name, pl.String) for name in columns}
    try:
        frame = pl.read_csv(
            path,
            has_header=False,
            separator=" ",
            quote_char=None,
            schema=schema,
            encoding="utf8",
            raise_if_empty=False,
        )
    except (pl.exceptions.PolarsError, UnicodeDecodeError, ValueError):
        return None
    facts = scanned() if scanned is not None else scan_run_bytes(path)
    # The CSV reader takes CR LF for a line end, and skips a blank line.
    if facts.carriage_return or frame.height != facts.lines:
        return None
    strings = [name for name, kind in schema.items() if kind == pl.String]
    whitespace = (
        pl.lit(False)
        if facts.ascii_spaces_only
        else pl.any_horizontal(pl.col(name).str.contains(r"\s") for name in strings)
    )
    # Every line under MAX_LINE_BYTES: the longest of each field together (numbers at most 40 bytes) bound
    # them all at once; only past that bound is each line summed.
    longest = frame.select(pl.sum_horizontal(pl.col(name).str.len_bytes().max() for name in strings)).item() or 0
    length = pl.sum_horizontal(pl.col(name).str.len_bytes() for name in strings) + 2 * len(columns) + 40
    too_long = length > MAX_LINE_BYTES if longest + 2 * len(columns) + 40 > MAX_LINE_BYTES else pl.lit(False)
    irregular = pl.any_horizontal(pl.all().is_null()) | whitespace | too_long
    if "score" in schema:
        irregular = irregular | ~pl.col("score").is_finite()
    irregular = irregular | (pl.col("rank") < 0)  # the block parser names the line
    if frame.select(irregular.any()).item():
        return None
    score = pl.col("score") if run_format != "msmarco" else (-pl.col("rank")).cast(pl.Float64).alias("score")
    return frame.select(pl.int_range(1, frame.height + 1, dtype=pl.Int64).alias("line"), "qid", "docid", score)


def _keep_known(path: Path, fields: pl.DataFrame, known: KnownDocids | None, skipped: Skipped | None) -> pl.DataFrame:
    """``fields`` without the lines whose docid the collection does not hold, each an error (or
    skipped and reported, with ``skipped``)."""
    if known is None:
        return fields
    held = pl.Series(known.contains(fields["docid"]))
    unknown = fields.filter(~held).sort("line")
    for line, docid in unknown.select("line", "docid").iter_rows():
        raise_or_skip(InputError(path, line, f"docid {docid!r} is not in the collection"), skipped)
    return fields.filter(held) if len(unknown) else fields


def finish_run(path: Path, fields: pl.DataFrame, order: str, skipped: Skipped | None, run_format: str) -> RunTable:
    """The run from all its validated lines in file order: repeated pairs refused, query
    blocks gathered, ties ordered, ranks given."""
    if not len(fields):
        raise InputError(path, None, "the run is empty")

    duplicate = _repeated_pairs(fields)
    for line, qid, docid in duplicate.select("line", "qid", "docid").iter_rows():
        raise_or_skip(InputError(path, line, f"docid {docid!r} appears twice for query {qid!r}"), skipped)
    if len(duplicate):
        fields = fields.join(duplicate.select("line"), on="line", how="anti", maintain_order="left")

    starts = (pl.col("qid") != pl.col("qid").shift(1)).fill_null(True)
    blocks = fields.with_columns(starts.cum_sum().alias("block"))
    queries = blocks.filter(starts)["qid"].n_unique()  # each query's first row starts a block
    interleaved = 0
    if blocks["block"].max() != queries:  # some query's lines come in several blocks
        interleaved = int(
            blocks.group_by("qid").agg(pl.col("block").n_unique().alias("n")).filter(pl.col("n") > 1).height
        )
        # Gather each query at its first block; "line" keeps the file order within it.
        blocks = blocks.with_columns(pl.col("block").min().over("qid")).sort("block", "line")

    # Within a block, "line" is the file order: sorts on (block, score, line) keep it for ties.
    frame = blocks.select("qid", "docid", "score", "block", "line")
    stable, trec, in_score_order = _score_orders(frame)
    changed = stable != trec
    reordered_rows = int(changed.sum())
    reordered_ties = int(np.unique(frame["block"].to_numpy()[trec[changed]]).size)
    in_file_order = in_score_order and not reordered_rows  # trec is then 0, 1, 2, …
    chosen = frame[trec] if order == "score" and not in_file_order else frame
    out = chosen.select("qid", "docid", pl.Series("rank", _ranks(chosen["block"].to_numpy())), "score")
    return RunTable(out, queries, reordered_ties, reordered_rows, interleaved, run_format, in_score_order)

"""What the measures read, in the shapes the field passes them around (docs/library.md, "Inputs" and "What is
refused"): a run (:func:`load_run`: a run file, a frame or ``{qid: {docno: score}}``) and texts (:func:`load_texts`:
a file, a dict, a frame or a docstore, of which only the documents a measure reads are fetched, by id).

What would give a wrong number is refused where the input is read, each rule checked once: above all, ranked
documents the texts lack (:class:`MissingTextsError`), since texts keyed by other ids than the run's would read as
no text at all and every run as perfectly fair.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from genderbias.files.blocks import iter_blocks
from genderbias.files.collection import parse_passages
from genderbias.files.docstores import read_texts
from genderbias.files.runs import read_run
from genderbias.ranking.ties import check_scores
from genderbias.text.magnitudes import count_frame

__all__ = ["MissingTextsError", "Texts", "load_run", "load_texts"]

RUN_SCHEMA = {"qid": pl.String, "docid": pl.String, "rank": pl.Int64, "score": pl.Float64}
_QID = ("qid", "query_id")
_DOCID = ("docno", "docid", "doc_id")
#: What a ranked document the texts lack reads as: refused (the default), or an empty text.
MISSING = ("error", "empty")
#: How many of the missing documents' ids a message names.
FIRST_IDS = 5


def _column(frame: pl.DataFrame, names: tuple[str, ...], what: str) -> str:
    for name in names:
        if name in frame.columns:
            return name
    raise ValueError(f"the {what} frame has no column {' or '.join(names)} (its columns: {', '.join(frame.columns)})")


def _polars(frame: Any) -> pl.DataFrame:
    if isinstance(frame, pl.DataFrame):
        return frame
    return pl.from_pandas(frame.reset_index(drop=True) if hasattr(frame, "reset_index") else frame)


def load_run(run: Any) -> pl.DataFrame:
    """The run as ``qid, docid, rank, score``; one without ranks is ranked by score, ties in the order given."""
    if isinstance(run, str | Path):
        return read_run(run).frame.select(*RUN_SCHEMA).cast(RUN_SCHEMA)
    if isinstance(run, Mapping):
        rows = [(str(q), str(d), float(s)) for q, docs in run.items() for d, s in docs.items()]
        frame = pl.DataFrame(rows, schema={"qid": pl.String, "docid": pl.String, "score": pl.Float64}, orient="row")
    elif hasattr(run, "columns"):
        frame = _polars(run)
        qid, docid = _column(frame, _QID, "run"), _column(frame, _DOCID, "run")
        if "score" not in frame.columns:
            raise ValueError(f"the run frame has no column score (its columns: {', '.join(frame.columns)})")
        keep = [pl.col(qid).cast(pl.String).alias("qid"), pl.col(docid).cast(pl.String).alias("docid")]
        keep.append(pl.col("score").cast(pl.Float64))
        if "rank" in frame.columns:
            keep.append(pl.col("rank").cast(pl.Int64))
        frame = frame.select(keep)
    else:
        raise TypeError(
            f"a run is a TREC run file, a frame (qid, docno, score) or a dict {{qid: {{docno: score}}}}, not {type(run).__name__}"
        )
    check_run(frame)
    if "rank" not in frame.columns:
        order = frame.with_row_index("given").sort(["qid", "score", "given"], descending=[False, True, False])
        ranks = order.with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("qid").alias("rank"))
        frame = ranks.sort("given").drop("given")
    first = frame.select("qid").unique(maintain_order=True).with_row_index("query")
    frame = frame.join(first, on="qid", maintain_order="left").sort(["query", "rank"], maintain_order=True)
    return frame.select(*RUN_SCHEMA)


def check_run(frame: pl.DataFrame) -> None:
    """Refuse a run (``qid, docid, score[, rank]``) by the module docstring's rules, naming the first row at fault."""
    for column, what in (("qid", "query id"), ("docid", "document id")):
        empty = frame.with_row_index("row").filter(pl.col(column).is_null())
        if len(empty):
            raise ValueError(f"the run's row {empty['row'][0] + 1} has no {what} (a missing {column})")
    repeated = frame.filter(pl.struct("qid", "docid").is_duplicated())
    if len(repeated):
        qid, docid = repeated.row(0)[:2]
        raise ValueError(f"the run ranks document {docid!r} twice for query {qid!r}")
    check_scores(frame)


class MissingTextsError(ValueError):
    """Ranked documents the texts lack: ``count`` of them, the first ids in ``first``."""

    def __init__(self, count: int, asked: int, first: list[str]) -> None:
        self.count, self.first = count, first
        named = ", ".join(map(repr, first)) + (", …" if count > len(first) else "")
        super().__init__(
            f"the texts lack {count} of the {asked} ranked documents the measures read (first: {named}); "
            "give the texts keyed by the run's document ids, or missing='empty' to read a document "
            "without a text as one without a gendered word"
        )


class Texts:
    """Documents' texts fetched by id as the measures ask for them, each once; ``missing``: module docstring."""

    def __init__(self, source: Any, missing: str = "error") -> None:
        if missing not in MISSING:
            raise ValueError(f"missing must be one of {', '.join(map(repr, MISSING))}, got {missing!r}")
        self.source, self.missing = source, missing
        self._known = pl.DataFrame(schema={"docid": pl.String, "text": pl.String})
        self._asked: set[str] = set()
        self._by_str: dict[str, Any] | None = None  # a dict's keys that are not strings, by str(key)

    def __repr__(self) -> str:
        return f"Texts({type(self.source).__name__}, missing={self.missing!r})"

    def frame(self, docids: Iterable[str]) -> pl.DataFrame:
        """``docid, text`` of ``docids``; a document the texts lack is refused, or left out with ``missing="empty"``."""
        wanted = pl.Series("docid", list(docids), dtype=pl.String).unique(maintain_order=True)
        new = [docid for docid in wanted.to_list() if docid not in self._asked]
        if new:
            fetched = self._fetch(pl.Series("docid", new, dtype=pl.String)).select("docid", "text")
            self._known = pl.concat([self._known, _check_texts(fetched.cast(pl.String))])
            self._asked.update(new)
        found = self._known.join(wanted.to_frame(), on="docid", how="semi")
        if self.missing == "error" and len(found) < len(wanted):
            absent = wanted.to_frame().join(found, on="docid", how="anti")["docid"]
            raise MissingTextsError(len(absent), len(wanted), absent.head(FIRST_IDS).to_list())
        return found

    def counts(self, docids: Iterable[str], wordlist, tokenizer: str) -> pl.DataFrame:
        """``docid, f, m, length`` under ``wordlist`` and ``tokenizer``: the platform's counting
        (:func:`genderbias.text.magnitudes.count_frame`) of the same texts."""
        return count_frame(self.frame(docids), wordlist, tokenizer)

    def _fetch(self, wanted: pl.Series) -> pl.DataFrame:
        source = self.source
        if isinstance(source, str | Path):
            path = Path(source)
            parts = [parse_passages(path, lines, wanted=wanted) for lines, _ in iter_blocks(path)]
            return pl.concat([p.select("docid", "text") for p in parts]) if parts else self._known.clear()
        if isinstance(source, Mapping):
            rows = [(docid, self._text(docid)) for docid in wanted.to_list()]
            rows = [(docid, text if isinstance(text, str) else None) for docid, text in rows if text is not _ABSENT]
            return pl.DataFrame(rows, schema=self._known.schema, orient="row")
        if hasattr(source, "get_many"):
            return read_texts(source, wanted)
        if hasattr(source, "columns"):
            frame = _polars(source)
            docid = _column(frame, _DOCID, "texts")
            if "text" not in frame.columns:
                raise ValueError(f"the texts frame has no column text (its columns: {', '.join(frame.columns)})")
            frame = frame.select(pl.col(docid).cast(pl.String).alias("docid"), pl.col("text").cast(pl.String))
            return frame.join(wanted.to_frame(), on="docid", how="semi")
        raise TypeError(
            "texts are a docid<TAB>text file, a dict {docid: text}, a frame (docno, text) or a docstore "
            f"with get_many(ids), not {type(source).__name__}"
        )

    def _text(self, docid: str) -> Any:
        """A dict's text of ``docid``, by the key itself or by a non-string key reading as it (``1`` for ``"1"``);
        two keys reading as one id are refused."""
        source = self.source
        if self._by_str is None and (type(source) is dict or docid not in source):
            self._by_str = {}
            for key in source:
                if not isinstance(key, str):
                    text = str(key)
                    if text in self._by_str or text in source:
                        raise ValueError(f"the texts' keys {key!r} and {text!r} are one document id, {text!r}")
                    self._by_str[text] = key
        if docid in source:
            return source[docid]
        key = self._by_str.get(docid, _ABSENT) if self._by_str else _ABSENT
        return _ABSENT if key is _ABSENT else source[key]


_ABSENT = object()


def _check_texts(fetched: pl.DataFrame) -> pl.DataFrame:
    """``fetched`` (``docid, text``) once per document; a text missing or not a string, or a document given twice
    with two texts, is refused."""
    empty = fetched.filter(pl.col("text").is_null())
    if len(empty):
        raise ValueError(f"the text of document {empty['docid'][0]!r} is missing or not a string")
    fetched = fetched.unique(maintain_order=True)
    twice = fetched.filter(pl.col("docid").is_duplicated())
    if len(twice):
        raise ValueError(f"the texts give document {twice['docid'][0]!r} twice, with two texts")
    return fetched


def load_texts(texts: Any, missing: str = "error") -> Texts:
    """``texts`` as :class:`Texts` (itself when it is one already: its own ``missing`` holds)."""
    return texts if isinstance(texts, Texts) else Texts(texts, missing)

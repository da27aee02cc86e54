"""What the measures read, in the shapes the field passes them around.

A **run** (:func:`load_run`): a TREC run file (``qid Q0 docid rank score tag``, or MS MARCO's ``qid
docid rank``; read by :func:`genderbias.files.runs.read_run`, as the platform imports runs), a
pandas or polars frame in the TREC/PyTerrier shape (``qid, docno, score[, rank]``; ir_measures'
``query_id, doc_id, score`` too), or a dict ``{qid: {docno: score}}`` as ir_measures takes it.

**Texts** (:func:`load_texts`): a ``docid<TAB>text`` file (gzipped or not; read as the platform
reads a collection), a dict ``{docid: text}``, a frame ``docno, text`` (or ``docid``/``doc_id``),
or a docstore (anything with ``get_many(ids)``: an ir_datasets docstore, MS MARCO v2's bundle files as
:class:`genderbias.files.docstores.V2PassageFiles`): only the texts of the documents a measure reads are
fetched, by id, never the whole collection (:func:`genderbias.files.docstores.read_texts`, the platform's
reader of a collection registered by reference).
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
from genderbias.text.magnitudes import count_frame

RUN_SCHEMA = {"qid": pl.String, "docid": pl.String, "rank": pl.Int64, "score": pl.Float64}
_QID = ("qid", "query_id")
_DOCID = ("docno", "docid", "doc_id")


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
    """The run as ``qid, docid, rank, score`` (ranks 1, 2, … per query).

    A frame or dict without ranks is ranked by score, ties in the order given (the bias figures
    are tie-aware by default, so no order of ties is chosen for them: :mod:`genderbias.ranking.ties`).
    """
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
    if "rank" not in frame.columns:
        order = frame.with_row_index("given").sort(["qid", "score", "given"], descending=[False, True, False])
        ranks = order.with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("qid").alias("rank"))
        frame = ranks.sort("given").drop("given")
    repeated = frame.filter(pl.struct("qid", "docid").is_duplicated())
    if len(repeated):
        qid, docid = repeated.row(0)[:2]
        raise ValueError(f"the run ranks document {docid!r} twice for query {qid!r}")
    first = frame.select("qid").unique(maintain_order=True).with_row_index("query")
    frame = frame.join(first, on="qid", maintain_order="left").sort(["query", "rank"], maintain_order=True)
    return frame.select(*RUN_SCHEMA)


class Texts:
    """Documents' texts fetched by id as the measures ask for them, each fetched once."""

    def __init__(self, source: Any) -> None:
        self.source = source
        self._known = pl.DataFrame(schema={"docid": pl.String, "text": pl.String})
        self._asked: set[str] = set()

    def frame(self, docids: Iterable[str]) -> pl.DataFrame:
        """``docid, text`` of those of ``docids`` the texts hold (a document they lack reads as empty:
        no gendered word, :mod:`genderbias.ranking.measures`)."""
        wanted = pl.Series("docid", list(docids), dtype=pl.String).unique()
        new = [docid for docid in wanted.to_list() if docid not in self._asked]
        if new:
            fetched = self._fetch(pl.Series("docid", new, dtype=pl.String))
            self._known = pl.concat([self._known, fetched.select("docid", "text").cast(pl.String)])
            self._asked.update(new)
        return self._known.join(wanted.to_frame(), on="docid", how="semi")

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
            rows = [(docid, source[docid]) for docid in wanted.to_list() if docid in source]
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


def load_texts(texts: Any) -> Texts:
    """``texts`` as :class:`Texts` (itself when it is one already)."""
    return texts if isinstance(texts, Texts) else Texts(texts)

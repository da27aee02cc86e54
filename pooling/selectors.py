"""Reads of pooling state for pages, the API, services and other apps.

Nothing here writes to the database; a docid index or a run's or qrels' Parquet file removed from
``settings.CACHE_DIR`` is rebuilt from the imported file, as the import wrote it (a cache, not state).
Heavy libraries are imported inside the functions, so importing this module stays light.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from django.db.models import Count, Q

from core.errors import ServiceError
from core.figure_notes import figure_notes
from genderbias.errors import InputError, Skipped
from genderbias.files.atomic import file_sha256, write_parquet_atomic
from genderbias.files.docstores import V2PassageFiles
from genderbias.files.qrelfiles import read_qrels
from genderbias.text.wordlists import GenderWords, wordlist_from_mapping
from pooling.models import Query

from .irdatasets import DatasetTexts
from .models import Collection, Pool, Qrels, QuerySet, Run, WordList

if TYPE_CHECKING:
    import polars as pl

# --- collections -----------------------------------------------------------------------


def collection_texts(collection: Collection):
    """The docstore (``get_many``) of a collection by reference, after checking it still is what was
    registered (a folder registered with its links resolved that now resolves elsewhere is refused)."""
    if collection.kind == Collection.Kind.MSMARCO_V2:
        if os.path.realpath(collection.path) != collection.path:
            raise ServiceError(
                f"collection {collection.name!r}: {collection.path} now leads through a symbolic link "
                "elsewhere; only the folder registered is read"
            )
        try:
            files = V2PassageFiles(collection.path)
        except InputError as exc:
            raise ServiceError(f"collection {collection.name!r}: {exc}") from None
        if files.fingerprint()[0] != collection.sha256:
            raise ServiceError(
                f"collection {collection.name!r}: the bundles in {collection.path} changed since it was registered"
            )
        return files
    if collection.kind == Collection.Kind.IR_DATASETS:
        return DatasetTexts(collection.path)
    raise ServiceError(f"collection {collection.name!r} is a file, not a collection by reference")


def known_docids_of(collection: Collection):
    """What a by-reference collection checks docids against (``contains``): MS MARCO v2 bundles the id
    scheme and offsets; an ir_datasets docstore nothing (``None``: a missing docid is named when read)."""
    if collection.kind == Collection.Kind.MSMARCO_V2:
        return collection_texts(collection)
    return None


def docid_index(collection: Collection) -> Path:
    """The collection's docid index (``docid``, and for plain files ``start, length``), rebuilt
    if the cache was cleared."""
    from genderbias.files.collection import scan_collection

    if collection.by_reference:
        raise ServiceError(f"collection {collection.name!r} is registered by reference: it has no list of every docid")
    index_path = Path(collection.docid_index)
    if not index_path.exists():
        index_path.parent.mkdir(parents=True, exist_ok=True)
        scan = scan_collection(collection.path, index_path=index_path)
        if scan.sha256 != collection.sha256:
            index_path.unlink()
            raise ServiceError(f"collection {collection.name!r}: {collection.path} changed since it was imported")
    return index_path


def collection_docids(collection: Collection) -> pl.Series:
    """Every docid of the collection, from its index."""
    import polars as pl

    return pl.read_parquet(docid_index(collection), columns=["docid"])["docid"].cast(pl.String)


def has_spans(collection: Collection) -> bool:
    """Whether the collection's docid index holds each passage's span in the file (not for a gzipped file)."""
    import polars as pl

    return "start" in pl.read_parquet_schema(docid_index(collection))


def reads_by_docid(collection: Collection) -> bool:
    """Whether some passages' texts are read without reading the rest: a collection by reference,
    or a file whose docid index holds the spans (:func:`has_spans`)."""
    return collection.by_reference or has_spans(collection)


def passage_spans(collection: Collection, docids: pl.Series) -> pl.DataFrame | None:
    """``docid, start, length`` of those ``docids`` in the collection's file; ``None`` when its
    index has no spans (:func:`has_spans`)."""
    import polars as pl

    index_path = docid_index(collection)
    if not has_spans(collection):
        return None
    wanted = docids.cast(pl.String).to_frame("docid").lazy()
    index = pl.scan_parquet(index_path).with_columns(pl.col("docid").cast(pl.String))
    return index.join(wanted, on="docid", how="semi").collect()


# --- runs ------------------------------------------------------------------------------


def _cached_frame(imported: Run | Qrels, what: str, rows: str, expected: int, rebuild, **write) -> pl.DataFrame:
    """The normalised Parquet file of ``imported``, rebuilt by ``rebuild()`` as the import wrote it
    (``write``: its options) if the cache is gone; the imported file's content and the ``expected``
    number of ``rows`` must still match."""
    import polars as pl

    data = Path(imported.data)
    if data.exists():
        return pl.read_parquet(data)
    if not Path(imported.path).is_file() or file_sha256(imported.path) != imported.sha256:
        raise ServiceError(
            f"{what} {imported.name!r}: its cache is gone and {imported.path} is missing or changed since it was imported"
        )
    frame = rebuild()
    if len(frame) != expected:
        raise ServiceError(f"{what} {imported.name!r}: rebuilding its cache gave {len(frame)} {rows}, not {expected}")
    data.parent.mkdir(parents=True, exist_ok=True)
    write_parquet_atomic(frame, data, **write)
    return frame


def run_frame(run: Run) -> pl.DataFrame:
    """The normalised run (``qid, docid, rank, score``), rebuilt as imported if the cache is gone."""
    from genderbias.files.runs import read_run

    def rebuild():
        collection = run.collection
        known = known_docids_of(collection) if collection.by_reference else collection_docids(collection)
        return read_run(run.path, order=run.order, known_docids=known, skipped=Skipped()).frame

    return _cached_frame(run, "run", "rows", run.rows, rebuild, compression="lz4")  # as import_run writes it


def top_rankings(runs: Sequence[Run], qids, depth: int, source: str, *, through_ties: bool = False) -> dict:
    """Each run's rankings down to ``depth`` for the ``qids`` (a polars Series), by run name.

    ``through_ties``: also every document tied with one of the top ``depth``, which tie-aware figures
    average over. A run holding none of the queries is an error naming it and ``source`` (the query
    set), never an empty column.
    """
    import polars as pl

    wanted = qids.to_frame().lazy()
    reach = depth + 1 if through_ties else depth  # one rank more shows where a tie group crosses the depth
    top = {
        run.name: _scan(run).filter(pl.col("rank") <= reach).join(wanted, on="qid", how="semi", maintain_order="left")
        for run in runs
    }
    frames = dict(zip(top, pl.collect_all(top.values()), strict=True))  # the runs read side by side
    for run in runs:
        if not len(frames[run.name]):
            raise ServiceError(f"run {run.name!r} contains none of the queries of {source}")
        if through_ties:
            frames[run.name] = _through_ties(run, frames[run.name], wanted, depth)
    return frames


def top_docids(runs: Sequence[Run], depth: int) -> pl.Series:
    """The docids the ``runs`` rank within ``depth`` (any query), each once."""
    import polars as pl

    top = [_scan(run).filter(pl.col("rank") <= depth).select("docid") for run in runs]
    return pl.concat(pl.collect_all(top))["docid"].unique() if top else pl.Series("docid", [], dtype=pl.String)


def _scan(run: Run):
    import polars as pl

    return pl.scan_parquet(run.data) if Path(run.data).exists() else run_frame(run).lazy()


def _through_ties(run: Run, top, wanted, depth: int):
    """``top`` (ranks ≤ depth + 1) cut at ``depth``, with every document tied with the top ``depth`` by score.

    A run in score order has a tie group cross the depth only where ranks ``depth`` and ``depth + 1``
    share a score: the rest of the group is read for those queries alone. Another run is read whole
    for its queries (its cost: docs/benchmarks.md).
    """
    import polars as pl

    if run.order != Run.Order.SCORE and not run.score_ordered:
        lowest = pl.col("score").filter(pl.col("rank") <= depth).min().over("qid")
        whole = _scan(run).join(wanted, on="qid", how="semi", maintain_order="left")
        return whole.filter((pl.col("rank") <= depth) | (pl.col("score") >= lowest)).collect()
    edge = top.filter(pl.col("rank") == depth).select("qid", pl.col("score").alias("edge"))
    after = top.filter(pl.col("rank") == depth + 1).select("qid", pl.col("score").alias("after"))
    crossing = edge.join(after, on="qid").filter(pl.col("edge") == pl.col("after")).select("qid", "edge")
    kept = top.filter(pl.col("rank") <= depth)
    if not len(crossing):
        return kept
    rest = (
        _scan(run)  # is_in, not a join, filters while reading (docs/benchmarks.md)
        .filter((pl.col("rank") > depth) & pl.col("qid").is_in(crossing["qid"].implode()))
        .join(crossing.lazy(), on="qid", how="inner")
        .filter(pl.col("score") == pl.col("edge"))
        .select(kept.columns)
        .collect()
    )
    return pl.concat([kept, rest])


# --- relevance judgments --------------------------------------------------------------


def read_qrels_checked(path: str | Path, collection: Collection, query_set: QuerySet, skipped: Skipped | None):
    """A qrels file's judgments (``qid, docid, rel``), checked against the query set and the collection."""
    import polars as pl

    if collection.by_reference:
        checker = known_docids_of(collection)

        def known(wanted: list[str]) -> list[str]:
            if checker is None:
                return list(wanted)
            asked = pl.Series("docid", wanted, dtype=pl.String)
            return asked.filter(pl.Series(checker.contains(asked))).to_list()
    else:
        docids = collection_docids(collection)

        def known(wanted: list[str]) -> list[str]:
            asked = pl.DataFrame({"docid": wanted}, schema={"docid": pl.String})
            return docids.to_frame("docid").join(asked, on="docid", how="semi")["docid"].to_list()

    qids = set(query_set.queries.values_list("qid", flat=True))
    return read_qrels(
        path, known_qids=qids, known_docids=known, skipped=skipped, source=f"query set {query_set.name!r}"
    )


def qrels_frame(qrels: Qrels) -> pl.DataFrame:
    """The judgments (``qid, docid, rel``), rebuilt as imported if the cache is gone."""

    def rebuild():
        return read_qrels_checked(qrels.path, qrels.collection, qrels.query_set, Skipped())

    return _cached_frame(qrels, "qrels", "judgments", qrels.judgments, rebuild)


# --- word lists ------------------------------------------------------------------------


def wordlist_of(record: WordList) -> GenderWords:
    """The word list a stored record holds (the record keeps its words, not a file)."""
    return wordlist_from_mapping(record.words, record.name)


# --- pools -----------------------------------------------------------------------------


def pool_table(pool: Pool) -> tuple[list[str], list[dict]]:
    """Rows for the pool page and download, one per pooled query: its RaB per run, ``ties`` (run →
    :class:`core.figure_notes.FigureNotes` where ties move it) and ``selected`` (run → list positions)."""
    from genderbias.ranking.pool import sort_qids

    runs = [run.name for run in pool.runs.order_by("name")]
    rows: dict[str, dict] = {}
    metric = "RaB"
    for qid, text, run, rab, low, high, female, male in pool.entries.values_list(
        "query__qid", "query__text", "run__name", "rank_bias", "tie_low", "tie_high", "female_position", "male_position"
    ):
        row = rows.setdefault(qid, {"qid": qid, "query": text, "rab": {}, "ties": {}, "selected": {}, "lists": []})
        row["rab"][run] = rab
        notes = figure_notes({"metric": metric, "tie_low": low, "tie_high": high})
        if notes.tie_range is not None:
            row["ties"][run] = notes
        if female or male:
            row["selected"][run] = (female, male)
        if female:
            row["lists"].append(f"{run}:female#{female}")
        if male:
            row["lists"].append(f"{run}:male#{male}")
    return runs, [rows[qid] for qid in sort_qids(rows)]


def summarise_pool(runs: list[str], rows: list[dict]) -> dict:
    """Size, per-list counts and pairwise overlap (Jaccard) between runs' selections, from ``pool_table``."""
    picks = {run: {row["qid"]: row["selected"][run] for row in rows if run in row["selected"]} for run in runs}
    from genderbias.ranking.pool import selection_summary

    return selection_summary(runs, len(rows), picks)


def pool_summary(pool: Pool) -> dict:
    """:func:`summarise_pool` of the pool, reading only the selected entries, not every entry with its text."""
    runs = [run.name for run in pool.runs.order_by("name")]
    picks: dict[str, dict[str, tuple]] = {run: {} for run in runs}
    selected = pool.entries.filter(Q(female_position__gt=0) | Q(male_position__gt=0))
    for run, qid, female, male in selected.values_list("run__name", "query__qid", "female_position", "male_position"):
        picks[run][qid] = (female, male)
    from genderbias.ranking.pool import selection_summary

    return selection_summary(runs, pool.queries.queries.count(), picks)


def overview() -> dict:
    """What the researchers' home page lists of pooling: collections, query sets, runs, pools, word lists."""
    return {
        "collections": Collection.objects.all(),
        "query_sets": QuerySet.objects.annotate(size=Count("queries")),
        "runs": Run.objects.select_related("collection"),
        "pools": Pool.objects.annotate(size=Count("queries__queries")),
        "wordlists": WordList.objects.order_by("name"),
    }


def recent_imports(limit: int = 20) -> list[dict]:
    """The latest imported objects, by job or command: ``{"kind", "name", "summary", "created"}``, newest
    first; never a path on the server."""
    per_kind = [
        (
            "collection",
            Collection.objects.order_by("-created")[:limit],
            lambda c: f"{c.passages:,} passages" if c.passages is not None else "by reference: passages read by id",
        ),
        (
            "query set",
            QuerySet.objects.filter(origin=QuerySet.Origin.IMPORTED)
            .annotate(size=Count("queries"))
            .order_by("-created")[:limit],
            lambda q: f"{q.size:,} queries",
        ),
        (
            "run",
            Run.objects.select_related("collection").order_by("-created")[:limit],
            lambda r: f"{r.queries:,} queries, {r.rows:,} rows over {r.collection.name}",
        ),
        (
            "qrels",
            Qrels.objects.select_related("query_set").order_by("-created")[:limit],
            lambda q: f"{q.judgments:,} judgments of {q.queries:,} queries of {q.query_set.name}",
        ),
        ("word list", WordList.objects.order_by("-created")[:limit], lambda w: f"{len(w.words):,} words"),
    ]
    rows = [
        {"kind": kind, "name": obj.name, "summary": summary(obj), "created": obj.created}
        for kind, objects, summary in per_kind
        for obj in objects
    ]
    return sorted(rows, key=lambda row: row["created"], reverse=True)[:limit]


def run_query_texts(run_names: Sequence[str], qids) -> dict[str, str]:
    """The text of each of ``qids`` for a page about runs (CRBO), which know their queries only by id.

    Looked up in the query sets the runs were pooled from (newest pool first), else where the other
    query sets agree: TREC ids repeat across collections, so an id whose sets disagree is left out
    and shown alone rather than with another study's query.
    """
    wanted = {str(qid) for qid in qids}
    if not wanted:
        return {}
    pooled = list(
        Pool.objects.filter(runs__name__in=list(run_names))
        .order_by("-created", "-pk")
        .values_list("source_id", flat=True)
    )
    rank = {query_set: index for index, query_set in enumerate(dict.fromkeys(pooled))}
    rows = Query.objects.filter(qid__in=wanted).values_list("qid", "text", "query_set_id")
    texts: dict[str, str] = {}
    for qid, text, _ in sorted((row for row in rows if row[2] in rank), key=lambda row: rank[row[2]]):
        texts.setdefault(qid, text)
    elsewhere: dict[str, set[str]] = {}
    for qid, text, _ in rows:
        if qid not in texts:
            elsewhere.setdefault(qid, set()).add(text)
    texts.update({qid: found.pop() for qid, found in elsewhere.items() if len(found) == 1})
    return texts


def named_set_facts(query_set: QuerySet | None) -> dict | None:
    """The named data set a query set was imported as (:mod:`genderbias.datasets`), with the query set's
    own licence and citation first; ``None`` for other queries. The one source for cards and texts."""
    named = query_set.named_set if query_set is not None else None
    if named is None:
        return None
    return {
        "set": named.key,
        "title": named.title,
        "short": named.short,
        "source": named.source,
        "url": named.url,
        "licence": query_set.licence or named.licence,
        "citation_key": named.citation_key,
        "citation": query_set.citation or named.citation,
    }

"""Services of the pooling app: everything that changes its state.

Heavy reading happens before any transaction opens; the database writes of one import
or pool happen in one transaction, so bad input or an interruption leaves nothing
half-written. Derived files (docid indexes, normalised runs, count caches) are written
atomically under ``settings.CACHE_DIR`` and named by content hash, so a retry or a second
import of the same file reuses them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import polars as pl
from django.db import transaction

from core.db import insert_rows
from core.errors import ServiceError
from core.files import atomic_write, file_sha256, write_parquet_atomic
from core.models import Job
from core.names import validate_name
from core.progress import Progress
from core.storage import cache_dir
from core.tasks import start_job

from . import magnitudes as mag
from .models import Collection, Pool, PoolEntry, Query, QuerySet, Run, WordList
from .pool import FEMALE_LIST, MALE_LIST, pool_queries, sort_qids
from .rank_bias import rank_bias_table
from .readers import Skipped, read_queries, read_run, scan_collection
from .tokenize import DEFAULT_TOKENIZER, TOKENIZERS
from .wordlists import WordList as Words
from .wordlists import default_wordlist, wordlist_from_mapping


def _byte_progress(path: Path, description: str, job: Job | None, bar: bool) -> Progress:
    return Progress(description, total=path.stat().st_size, unit="B", unit_scale=True, job=job, bar=bar)


# --- imports -------------------------------------------------------------------------------


@dataclass
class ImportResult:
    obj: object
    created: bool
    skipped: Skipped


def import_collection(
    path: str | Path, name: str, *, skip_bad_lines: bool = False, job: Job | None = None, bar: bool = True
) -> ImportResult:
    """Register a passage collection (the text stays in its file).

    Importing the same file under the same name again changes nothing; the same name
    for different content is refused.
    """
    validate_name(name, "collection")
    path = Path(path).resolve()
    skipped = Skipped() if skip_bad_lines else None
    staging = cache_dir("collections") / f".staging-{os.getpid()}-{path.name}.parquet"
    with _byte_progress(path, f"Scanning {path.name}", job, bar) as progress:
        scan = scan_collection(path, index_path=staging, progress=progress.update_to, skipped=skipped)
    index_path = cache_dir("collections") / f"{scan.sha256}.parquet"
    os.replace(staging, index_path)
    existing = Collection.objects.filter(name=name).first()
    if existing is not None:
        if existing.sha256 == scan.sha256:
            return ImportResult(existing, False, skipped or Skipped())
        raise ServiceError(f"a collection named {name!r} already exists with different content ({existing.path})")
    with transaction.atomic():
        collection = Collection.objects.create(
            name=name,
            path=str(path),
            size=scan.size,
            sha256=scan.sha256,
            passages=scan.passages,
            docid_index=str(index_path),
        )
    return ImportResult(collection, True, skipped or Skipped())


def collection_docids(collection: Collection) -> pl.Series:
    """Every docid of the collection, from its index (rebuilt if the cache was cleared)."""
    index_path = Path(collection.docid_index)
    if not index_path.exists():
        index_path.parent.mkdir(parents=True, exist_ok=True)
        scan = scan_collection(collection.path, index_path=index_path)
        if scan.sha256 != collection.sha256:
            index_path.unlink()
            raise ServiceError(f"collection {collection.name!r}: {collection.path} changed since it was imported")
    return pl.read_parquet(index_path)["docid"].cast(pl.String)


def import_queries(path: str | Path, name: str, *, skip_bad_lines: bool = False) -> ImportResult:
    """Register a query set from a ``qid<TAB>query`` file (idempotent, all or nothing)."""
    validate_name(name, "query set")
    path = Path(path).resolve()
    skipped = Skipped() if skip_bad_lines else None
    queries = read_queries(path, skipped=skipped)
    sha = file_sha256(path)
    existing = QuerySet.objects.filter(name=name).first()
    if existing is not None:
        if existing.sha256 == sha:
            return ImportResult(existing, False, skipped or Skipped())
        raise ServiceError(f"a query set named {name!r} already exists with different content")
    with transaction.atomic():
        query_set = create_query_set(name, queries, origin=QuerySet.Origin.IMPORTED, source=str(path), sha256=sha)
    return ImportResult(query_set, True, skipped or Skipped())


def create_query_set(
    name: str,
    queries: Iterable[tuple[str, str]],
    *,
    origin: str,
    source: str = "",
    sha256: str = "",
    description: str = "",
) -> QuerySet:
    """Create a query set with its queries (callers hold the transaction)."""
    validate_name(name, "query set")
    if QuerySet.objects.filter(name=name).exists():
        raise ServiceError(f"a query set named {name!r} already exists")
    query_set = QuerySet.objects.create(name=name, origin=origin, source=source, sha256=sha256, description=description)
    insert_rows(
        Query,
        ["query_set_id", "qid", "text", "position"],
        ((query_set.pk, qid, text, i) for i, (qid, text) in enumerate(queries)),
    )
    return query_set


def import_run(
    path: str | Path,
    name: str,
    collection: Collection,
    *,
    order: str = Run.Order.SCORE,
    skip_bad_lines: bool = False,
) -> ImportResult:
    """Register a TREC run over ``collection``, normalised into a Parquet file."""
    validate_name(name, "run")
    path = Path(path).resolve()
    sha = file_sha256(path)
    existing = Run.objects.filter(name=name).first()
    if existing is not None:
        if existing.sha256 == sha and existing.order == order and existing.collection_id == collection.pk:
            return ImportResult(existing, False, Skipped())
        raise ServiceError(f"a run named {name!r} already exists with different content, order or collection")
    skipped = Skipped() if skip_bad_lines else None
    table = read_run(path, order=order, known_docids=collection_docids(collection), skipped=skipped)
    data_path = cache_dir("runs") / f"{sha}-{order}-{collection.sha256[:16]}.parquet"
    write_parquet_atomic(table.frame, data_path)
    with transaction.atomic():
        run = Run.objects.create(
            name=name,
            collection=collection,
            path=str(path),
            sha256=sha,
            order=order,
            queries=table.queries,
            rows=len(table.frame),
            reordered_ties=table.reordered_ties,
            data=str(data_path),
        )
    return ImportResult(run, True, skipped or Skipped())


def run_frame(run: Run) -> pl.DataFrame:
    """The normalised run (``qid, docid, rank, score``).

    If the cached file is gone it is rebuilt from the run file, exactly as imported: the
    file must still have the imported content, lines are checked against the collection
    and bad ones skipped as ``--skip-bad-lines`` did, and the row count must match.
    """
    data = Path(run.data)
    if data.exists():
        return pl.read_parquet(data)
    if not Path(run.path).is_file() or file_sha256(run.path) != run.sha256:
        raise ServiceError(
            f"run {run.name!r}: its cache is gone and {run.path} is missing or changed since it was imported"
        )
    table = read_run(run.path, order=run.order, known_docids=collection_docids(run.collection), skipped=Skipped())
    if len(table.frame) != run.rows:
        raise ServiceError(f"run {run.name!r}: rebuilding its cache gave {len(table.frame)} rows, not {run.rows}")
    data.parent.mkdir(parents=True, exist_ok=True)
    write_parquet_atomic(table.frame, data)
    return table.frame


# --- word lists and counts -------------------------------------------------------------


def register_wordlist(words: Words | None = None) -> WordList:
    """The stored record of a word list (default: the 32 + 32 definitional words)."""
    words = words or default_wordlist()
    record, _ = WordList.objects.get_or_create(sha256=words.sha256, defaults={"name": words.name, "words": words.words})
    return record


def wordlist_of(record: WordList) -> Words:
    return wordlist_from_mapping(record.words, record.name)


def document_counts_for(
    collection: Collection,
    docids: Iterable[str] | pl.Series,
    wordlist: Words,
    tokenizer: str = DEFAULT_TOKENIZER,
    *,
    job: Job | None = None,
    bar: bool = True,
) -> pl.DataFrame:
    """Counts ``docid, f, m, length`` for ``docids``, from the cache or one pass over the collection.

    The cache is per (collection content, word list content, tokenizer) and grows with
    the documents analyses ask for.
    """
    if tokenizer not in TOKENIZERS:
        raise ServiceError(f"unknown tokenizer {tokenizer!r}; choose one of {', '.join(TOKENIZERS)}")
    wanted = pl.Series("docid", docids, dtype=pl.String).unique()
    cache = cache_dir("counts") / f"{collection.sha256[:20]}-{wordlist.sha256[:20]}-{tokenizer}.parquet"
    cached = pl.read_parquet(cache) if cache.exists() else pl.DataFrame(schema=mag.COUNT_SCHEMA)
    missing = wanted.to_frame().join(cached.select("docid"), on="docid", how="anti")["docid"]
    if len(missing):
        path = Path(collection.path)
        if not path.is_file() or path.stat().st_size != collection.size:
            raise ServiceError(
                f"collection {collection.name!r}: {path} is missing or changed since it was imported; import it again"
            )
        with _byte_progress(path, f"Counting gender words in {len(missing):,} passages", job, bar) as progress:
            fresh = mag.document_counts(path, missing, wordlist, tokenizer, progress=progress.update_to)
        cached = pl.concat([cached, fresh])
        write_parquet_atomic(cached, cache)
    return cached.join(wanted.to_frame(), on="docid", how="semi")


def magnitudes_frame(counts: pl.DataFrame, variant: str) -> pl.DataFrame:
    """``docid, f, m`` as magnitudes of one variant (``tc``, ``tf``, ``bool``)."""
    return counts.select(
        "docid", mag.magnitude(pl.col("f"), variant).alias("f"), mag.magnitude(pl.col("m"), variant).alias("m")
    )


# --- pools -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolSettings:
    rank_cutoff: int = 10
    depth: int = 500
    magnitude: str = "tf"
    tokenizer: str = DEFAULT_TOKENIZER

    def validate(self) -> None:
        if self.rank_cutoff < 1:
            raise ServiceError("--rank-cutoff must be at least 1")
        if self.depth < 1:
            raise ServiceError("--depth must be at least 1")
        if self.magnitude not in mag.MAGNITUDES:
            raise ServiceError(f"unknown magnitude {self.magnitude!r}; choose one of {', '.join(mag.MAGNITUDES)}")
        if self.tokenizer not in TOKENIZERS:
            raise ServiceError(f"unknown tokenizer {self.tokenizer!r}; choose one of {', '.join(TOKENIZERS)}")


def build_pool(
    name: str,
    query_set: QuerySet,
    runs: Sequence[Run],
    pool_settings: PoolSettings = PoolSettings(),
    wordlist: Words | None = None,
    *,
    job: Job | None = None,
    bar: bool = True,
) -> Pool:
    """Pool the most female- and male-leaning queries of every run.

    Builds, per run, RaB@cutoff over the queries of ``query_set`` the run contains, the
    two lists, and their union; stores the pooled queries as a new query set named like
    the pool, with provenance per (query, run).
    """
    pool_settings.validate()
    validate_name(name, "pool")
    if not runs:
        raise ServiceError("give at least one run")
    if Pool.objects.filter(name=name).exists() or QuerySet.objects.filter(name=name).exists():
        raise ServiceError(f"a pool or query set named {name!r} already exists; choose another --name")
    collections = {run.collection_id for run in runs}
    if len(collections) != 1:
        raise ServiceError("all runs of a pool must rank the same collection")
    words = wordlist or default_wordlist()
    texts = dict(query_set.queries.values_list("qid", "text"))
    qids = pl.Series("qid", list(texts), dtype=pl.String)

    frames = {}
    for run in runs:
        frame = run_frame(run).filter(pl.col("rank") <= pool_settings.rank_cutoff)
        frames[run.name] = frame.join(qids.to_frame(), on="qid", how="semi")
        if not len(frames[run.name]):
            raise ServiceError(f"run {run.name!r} contains none of the queries of {query_set.name!r}")
    docids = pl.concat([f["docid"] for f in frames.values()]).unique()
    counts = document_counts_for(runs[0].collection, docids, words, pool_settings.tokenizer, job=job, bar=bar)
    magnitudes = magnitudes_frame(counts, pool_settings.magnitude)
    column = f"RaB@{pool_settings.rank_cutoff}"
    rank_bias = {
        name: rank_bias_table(frame, magnitudes, [pool_settings.rank_cutoff])[column] for name, frame in frames.items()
    }
    result = pool_queries(rank_bias, pool_settings.depth)

    with transaction.atomic():
        pooled = create_query_set(
            name,
            [(qid, texts[qid]) for qid in result.qids],
            origin=QuerySet.Origin.POOL,
            source=f"pool of {query_set.name}",
            description=f"Top {pool_settings.depth} of the female- and male-leaning lists of {len(runs)} run(s)",
        )
        pool = Pool.objects.create(
            name=name,
            source=query_set,
            queries=pooled,
            wordlist=register_wordlist(words),
            rank_cutoff=pool_settings.rank_cutoff,
            depth=pool_settings.depth,
            magnitude=pool_settings.magnitude,
            tokenizer=pool_settings.tokenizer,
        )
        pool.runs.set(runs)
        query_ids = dict(pooled.queries.values_list("qid", "pk"))
        positions = {(row.run, row.list, row.qid): row.position for row in result.selections.itertuples(index=False)}
        entries = []
        for run in runs:
            values = rank_bias[run.name].to_dict()
            for qid in result.qids:
                value = values.get(qid)
                entries.append(
                    (
                        pool.pk,
                        query_ids[qid],
                        run.pk,
                        None if value is None else float(value),
                        positions.get((run.name, FEMALE_LIST, qid)),
                        positions.get((run.name, MALE_LIST, qid)),
                    )
                )
        insert_rows(
            PoolEntry, ["pool_id", "query_id", "run_id", "rank_bias", "female_position", "male_position"], entries
        )
    return pool


def start_pool(
    name: str,
    query_set: QuerySet,
    runs: Sequence[Run],
    pool_settings: PoolSettings,
    wordlist_path: str = "",
) -> Job:
    """Build a pool as a Celery task once the caller's transaction commits; returns its Job."""
    from .tasks import build_pool_task

    return start_job(
        build_pool_task,
        "pool",
        f"Pool {name}",
        name,
        query_set.pk,
        [run.pk for run in runs],
        asdict(pool_settings),
        wordlist_path,
    )


def write_query_file(query_set: QuerySet, path: str | Path) -> int:
    """Write ``qid<TAB>query`` lines atomically; returns the number written."""
    rows = list(query_set.queries.order_by("position").values_list("qid", "text"))

    def write(out) -> None:
        for qid, text in rows:
            out.write(f"{qid}\t{' '.join(text.split())}\n")

    atomic_write(path, write, newline="\n")
    return len(rows)


def pool_table(pool: Pool) -> tuple[list[str], list[dict]]:
    """Rows for the pool page and download: one per pooled query, with its RaB per run and
    where each run's lists put it (``selected``: run → (female position, male position))."""
    runs = [run.name for run in pool.runs.order_by("name")]
    rows: dict[str, dict] = {}
    for qid, text, run, rab, female, male in pool.entries.values_list(
        "query__qid", "query__text", "run__name", "rank_bias", "female_position", "male_position"
    ):
        row = rows.setdefault(qid, {"qid": qid, "query": text, "rab": {}, "selected": {}, "lists": []})
        row["rab"][run] = rab
        if female or male:
            row["selected"][run] = (female, male)
        if female:
            row["lists"].append(f"{run}:female#{female}")
        if male:
            row["lists"].append(f"{run}:male#{male}")
    return runs, [rows[qid] for qid in sort_qids(rows)]


def summarise_pool(runs: list[str], rows: list[dict]) -> dict:
    """Size, per-list counts and pairwise overlap (Jaccard) between runs' selections, from ``pool_table``."""
    selected = {run: {row["qid"] for row in rows if run in row["selected"]} for run in runs}
    overlap = [
        [
            len(selected[a] & selected[b]) / len(selected[a] | selected[b]) if selected[a] | selected[b] else 0.0
            for b in runs
        ]
        for a in runs
    ]
    per_list = [
        {
            "run": run,
            "female": sum(1 for row in rows if row["selected"].get(run, (None, None))[0]),
            "male": sum(1 for row in rows if row["selected"].get(run, (None, None))[1]),
            "only_here": len(selected[run] - set().union(*(selected[o] for o in runs if o != run))),
        }
        for run in runs
    ]
    return {"size": len(rows), "runs": runs, "per_list": per_list, "overlap": overlap}

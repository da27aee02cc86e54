"""Creating and cancelling a batch (its progress is read by :func:`annotation.crowd.selectors.batch_progress`)."""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Collection, Sequence
from dataclasses import asdict
from decimal import Decimal
from pathlib import Path

from django.db import transaction

from annotation.crowd.bonus_rules import most
from annotation.crowd.costs import Cost, provider_cost
from annotation.crowd.hit_groups import group_into_hits
from annotation.crowd.providers import CrowdProvider, get_provider, provider_class
from annotation.crowd.services.batch_settings import NOT_STORED, OFFERED, BatchSettings, GoldQuery, bonus_rule_of
from annotation.crowd.services.hooks import cancelled, created
from annotation.models import Batch, BatchQuery, Hit, HitQuery
from core.errors import ServiceError, StateError
from core.services.names import validate_name
from genderbias.errors import InputError
from genderbias.files.queryfiles import normalise_text
from genderbias.files.textfiles import MAX_LINE_BYTES, csv_records, open_text
from genderbias.labels import label_code
from pooling.models import Pool, QuerySet

#: The header line of a labelled CSV file (the project's exports write one; the study's file has none).
CSV_HEADER = ("qid", "query", "label")


#: How a labelled query set is named where a labelled file is expected (``--gold queries:study``).
LABELLED_SET_PREFIX = "queries:"


def read_labelled(source: str | Path) -> list[GoldQuery]:
    """Labelled queries from ``queries:NAME`` (:func:`labelled_query_set`) or a labelled file
    (:func:`read_labelled_file`): gold, training and test data alike."""
    if str(source).startswith(LABELLED_SET_PREFIX):
        return labelled_query_set(str(source).removeprefix(LABELLED_SET_PREFIX))
    return read_labelled_file(source)


read_gold_file = read_labelled  #: gold or training questions


def labelled_query_set(query_set: QuerySet | str) -> list[GoldQuery]:
    """The labelled queries of a query set, in file order; a set without labels is refused."""
    if isinstance(query_set, str):
        found = QuerySet.objects.filter(name=query_set).first()
        if found is None:
            raise ServiceError(f"no query set named {query_set!r}")
        query_set = found
    rows = query_set.queries.exclude(label="").order_by("position").values_list("qid", "text", "label")
    queries = [GoldQuery(qid, text, label) for qid, text, label in rows]
    if not queries:
        raise ServiceError(f"query set {query_set.name!r} has no labels: import a labelled file (qid,query,label)")
    return queries


def read_labelled_file(path: str | Path) -> list[GoldQuery]:
    """Read labelled queries (label: n/f/m/o or a category name) from TSV ``qid<TAB>query<TAB>label`` or
    CSV ``qid,query,label`` (by the name, or a header; the study's unquoted file: qid first, label last;
    an export's extra columns allowed), as every query file is read; bad input and a repeated qid are
    refused as ``file:line: problem``."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, None, "labelled query file not found")
    if csv.field_size_limit() < MAX_LINE_BYTES:  # a csv field as long as a line: the line limit is the limit
        csv.field_size_limit(MAX_LINE_BYTES)  # (only ever raised: the limit is the process's)
    queries, seen = [], set()
    with open_text(path) as file_lines:
        split = None
        # A quoted csv field may hold line breaks (RFC 4180): one record, numbered by its first line.
        csv_named = path.name.lower().endswith((".csv", ".csv.gz"))
        for number, line in csv_records(path, file_lines) if csv_named else enumerate(file_lines, start=1):
            if not line.strip():
                continue
            if split is None:
                split, is_header = _labelled_format(path, number, line)
                if is_header:
                    continue
            qid, text, label = (part.strip() for part in split(path, number, line))
            text = normalise_text(text).strip()
            code = label_code(label)
            if code is None:
                raise InputError(path, number, f"unknown label {label!r}; use n, f, m, o or a category name")
            if not qid or not text:
                raise InputError(path, number, "empty qid or query")
            if qid in seen:
                raise InputError(path, number, f"qid {qid} repeated")
            seen.add(qid)
            queries.append(GoldQuery(qid, text, code))
    return queries


def _csv_fields(path: Path, number: int, line: str) -> list[str]:
    """One line's csv fields; a line the csv module cannot read is ``file:line: problem``."""
    try:
        return next(csv.reader([line]), [])
    except csv.Error as exc:
        raise InputError(path, number, f"not a valid csv line ({exc})") from None


def _labelled_format(path: Path, number: int, first: str):
    """How to split the lines of a labelled file, from its name and first line; and whether that line is a header."""
    header = tuple(field.strip().lower() for field in _csv_fields(path, number, first))
    if header[:3] == CSV_HEADER:
        return (_split_csv if len(header) == 3 else _split_csv_columns(len(header))), True
    if path.name.lower().endswith((".csv", ".csv.gz")):
        return _split_csv, False
    return _split_tsv, False


def _split_tsv(path: Path, number: int, line: str) -> list[str]:
    parts = line.split("\t")
    if len(parts) != 3:
        raise InputError(path, number, "expected qid<TAB>query<TAB>label")
    return parts


def _split_csv(path: Path, number: int, line: str) -> list[str]:
    """``qid,query,label``: unquoted (the label after the last comma) or quoted by the csv module."""
    qid, comma, rest = line.partition(",")
    if rest.lstrip().startswith('"'):
        return _split_csv_columns(3)(path, number, line)
    text, comma2, label = rest.rpartition(",")
    if not comma or not comma2:
        raise InputError(path, number, "expected qid,query,label")
    return [qid, text, label]


def _split_csv_columns(columns: int):
    """Lines of exactly ``columns`` csv fields, of which the first three are qid, query and label."""

    def split(path: Path, number: int, line: str) -> list[str]:
        fields = _csv_fields(path, number, line)
        if len(fields) != columns:
            raise InputError(
                path,
                number,
                f"expected {columns} comma-separated fields, found {len(fields)} (quote a query with commas)",
            )
        return fields[:3]

    return split


def _unique_token(batch: Batch, position: int, qids: Sequence[str]) -> str:
    """Deterministic per HIT, different for every batch ever made: a retried create with the same token
    returns the HIT the platform already made (MTurk's UniqueRequestToken)."""
    digest = hashlib.sha256(f"{batch.name}|{batch.created.isoformat()}|{position}|{','.join(qids)}".encode())
    return f"{batch.pk}-{position}-{digest.hexdigest()[:12]}"


def cost_as_dict(cost: Cost, hits: int) -> dict[str, str | int]:
    return {key: str(value) if isinstance(value, Decimal) else value for key, value in asdict(cost).items()} | {
        "hits": hits
    }


def estimate_cost(settings: BatchSettings, queries: int) -> dict[str, str | int]:
    """The cost :func:`create_batch` records for ``queries`` queries, before anything is created;
    refuses the settings it would refuse."""
    settings.validate()
    hits = -(-queries // settings.queries_per_hit)
    bonuses = most(  # the bonus rule for every assignment approved
        bonus_rule_of(settings.provider_options), hits * settings.assignments_per_query, settings.gold_per_hit
    )
    cost = provider_cost(
        settings.provider,
        Decimal(settings.reward),
        settings.assignments_per_query,
        hits,
        options=settings.provider_options,
        bonuses=bonuses,
    )
    return cost_as_dict(cost, hits)


def stored_options(options: dict) -> dict:
    """A batch's options as stored: the older flat ``bonus`` as the bonus rule it is, so every batch
    has one bonus rule or none."""
    stored = {key: value for key, value in options.items() if key != "bonus"}
    rule = bonus_rule_of(options)
    if rule is not None:
        stored["bonus_rule"] = rule.as_options()
    return stored


def price_comparison(
    provider: str, reward: Decimal | str, assignments_per_query: int, hits: int
) -> dict[str, str | int] | None:
    """The price shown beside the batch's own for comparison (``CrowdProvider.comparison``), or ``None``."""
    declared = provider_class(provider).comparison(Decimal(reward), assignments_per_query, hits)
    if declared is None:
        return None
    where, cost = declared
    return cost_as_dict(cost, hits) | {"where": where}


@transaction.atomic
def create_batch(
    name: str,
    settings: BatchSettings,
    *,
    query_set: QuerySet | None = None,
    pool: Pool | None = None,
    gold: Sequence[GoldQuery] = (),
    training: Sequence[GoldQuery] = (),
    only_qids: Collection[str] | None = None,
) -> Batch:
    """Snapshot the queries and settings, group the queries into HITs (:mod:`annotation.crowd.hit_groups`)
    and record the cost estimate; nothing is sent to a provider yet. ``training``: the qualification
    step's queries; ``only_qids``: those queries of the set alone (a derived batch)."""
    query_set, queries = _check_sources(name, settings, query_set, pool, gold, only_qids)
    provider_options = provider_class(settings.provider).new_batch_options(
        stored_options(dict(settings.provider_options))
    )
    stored = {field: getattr(settings, field) for field in OFFERED if field not in NOT_STORED}
    stored.pop("provider_options")
    stored |= {"reward": Decimal(settings.reward), provider_class(settings.provider).options_field: provider_options}
    batch = Batch.objects.create(name=name, query_set=query_set, pool=pool, **stored)
    batch_queries = BatchQuery.objects.bulk_create(
        [BatchQuery(batch=batch, query=q, qid=q.qid, text=q.text, position=i) for i, q in enumerate(queries)],
        batch_size=2000,
    )
    gold_queries = BatchQuery.objects.bulk_create(
        [
            BatchQuery(batch=batch, qid=g.qid, text=g.text, position=i, is_gold=True, gold_label=g.label)
            for i, g in enumerate(gold)
        ]
    )
    hit_queries: list[HitQuery] = []
    slots = {"query": batch_queries, "gold": gold_queries}
    groups = group_into_hits(
        len(batch_queries),
        len(gold_queries),
        queries_per_hit=settings.queries_per_hit,
        gold_per_hit=settings.gold_per_hit,
        seed=settings.seed,
    )
    for number, group in enumerate(groups, start=1):
        members = [slots[kind][i] for kind, i in group]
        hit = Hit.objects.create(
            batch=batch,
            position=number,
            unique_token=_unique_token(batch, number, [m.qid for m in members]),
            max_assignments=settings.assignments_per_query,
        )
        hit_queries += [HitQuery(hit=hit, batch_query=bq, position=i) for i, bq in enumerate(members, start=1)]
    HitQuery.objects.bulk_create(hit_queries, batch_size=2000)
    created.run(batch, settings, training=training)  # e.g. the training queries stored (the qualification step)
    batch.cost = estimate_cost(settings, len(batch_queries))
    batch.save(update_fields=["cost"])
    return batch


def _check_sources(
    name: str,
    settings: BatchSettings,
    query_set: QuerySet | None,
    pool: Pool | None,
    gold: Sequence[GoldQuery],
    only_qids: Collection[str] | None = None,
) -> tuple[QuerySet, list]:
    """What ``create_batch`` refuses before it writes anything; returns the query set and its queries."""
    settings.validate()
    validate_name(name, "batch")
    if Batch.objects.filter(name=name).exists():
        raise ServiceError(f"a batch named {name!r} already exists")
    if pool is not None:
        if query_set is not None and query_set != pool.queries:
            raise ServiceError(f"pool {pool.name!r} was not made from query set {query_set.name!r}")
        query_set = pool.queries
    if query_set is None:
        raise ServiceError("a batch needs a query set or a pool")
    queries = list(query_set.queries.order_by("position"))
    if only_qids is not None:
        wanted = set(only_qids)
        queries = [q for q in queries if q.qid in wanted]
        missing = wanted - {q.qid for q in queries}
        if missing:
            raise ServiceError(f"qid(s) not in query set {query_set.name!r}: {', '.join(sorted(missing)[:5])}")
    if not queries:
        raise ServiceError(f"query set {query_set.name!r} has no queries")
    if settings.gold_per_hit and len(gold) < settings.gold_per_hit:
        raise ServiceError(f"{settings.gold_per_hit} gold questions per HIT need at least as many gold queries")
    # The study's file may be the gold of a pool drawn from it: gold queries are asked as gold only.
    gold_qids = {g.qid for g in gold}
    queries = [q for q in queries if q.qid not in gold_qids]
    if not queries:
        raise ServiceError(f"every query of query set {query_set.name!r} is a gold query: none is left to annotate")
    return query_set, queries


def cancel_batch(batch: Batch, provider: CrowdProvider | None = None) -> int:
    """Withdraw every open HIT and mark the batch cancelled; returns the HITs expired. Safe to re-run.
    Answers already given stay and can still be synced and reviewed: submitters must be paid."""
    if batch.status == Batch.Status.COMPLETED:
        raise StateError(f"batch {batch.name!r} is completed; nothing to cancel")
    provider = provider or get_provider(batch.provider)
    expired = 0
    for hit in batch.hits.filter(status=Hit.Status.OPEN).exclude(provider_id=None):
        provider.expire(hit)
        Hit.objects.filter(pk=hit.pk).update(status=Hit.Status.EXPIRED)
        expired += 1
    Batch.objects.filter(pk=batch.pk).update(status=Batch.Status.CANCELLED)
    batch.status = Batch.Status.CANCELLED
    cancelled.run(batch, provider)  # e.g. the stopped Prolific study's own participant groups go
    return expired

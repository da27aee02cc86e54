"""Exports: a batch's labelled queries written as a file with a dataset card beside it stating how they
were made."""

from __future__ import annotations

from pathlib import Path

from django.db import transaction
from django.utils import timezone

from annotation.crowd.services.locking import reads_answers
from annotation.exports.selectors import batch_facts, routing_facts
from annotation.models import Batch, Export
from annotation.results.export_formats import (
    EXPORT_FORMATS,
    card_facts,
    dataset_card,
    export_rows,
    write_dataset_card,
)
from annotation.results.selectors.agreement import agreement
from annotation.results.selectors.labels import CITATION, BatchAnswers, min_votes, query_results
from core.errors import ServiceError
from core.services.names import validate_name
from core.services.storage import cache_dir
from genderbias.files.atomic import check_writable, file_sha256
from genderbias.labels import EXPORT_CATEGORIES
from pooling import services as pooling_services
from pooling.models import QuerySet


@reads_answers("An export")
def export_queries(
    batch: Batch,
    category: str,
    path: str | Path,
    fmt: str = "tsv",
    as_query_set: str | None = None,
) -> Export:
    """Write the queries labelled ``category`` (or ``all``) in format ``fmt`` with a dataset card beside
    them; ``as_query_set`` also registers them as a query set (e.g. to measure the runs' bias on them)."""
    category = category.lower()
    if category not in EXPORT_CATEGORIES:
        raise ServiceError(f"unknown category {category!r}; choose {', '.join(EXPORT_CATEGORIES)}")
    if fmt not in EXPORT_FORMATS:
        raise ServiceError(f"unknown format {fmt!r}; choose {', '.join(EXPORT_FORMATS)}")
    if as_query_set:
        validate_name(as_query_set, "query set")  # before the file is written: its length, its group
    if as_query_set and QuerySet.objects.filter(name=as_query_set).exists():
        raise ServiceError(f"a query set named {as_query_set!r} already exists")
    path = check_writable(path)
    answers = BatchAnswers(batch)
    results = query_results(batch, answers)
    rows = export_rows(results, category)
    facts = card_facts(
        batch=batch_facts(batch),
        category=category,
        rows=rows,
        results=results,
        report=agreement(batch, answers=answers),
        min_votes=min_votes(batch),
        file_name=path.name,
        exported=timezone.now().date(),
        citation=CITATION,
        machine=routing_facts(batch),
        file_format=fmt,
    )
    EXPORT_FORMATS[fmt].write(rows, path)
    card = dataset_card(facts)
    card_path = write_dataset_card(card, path.with_name(path.name + ".md"))  # beside the export
    with transaction.atomic():
        query_set = None
        if as_query_set:
            query_set = pooling_services.create_query_set(
                as_query_set,
                [(r["qid"], r["query"]) for r in rows],
                origin=QuerySet.Origin.ANNOTATION,
                source=str(path.resolve()),
                sha256=file_sha256(path),
                description=f"{category} queries of annotation batch {batch.name}",
            )
        return Export.objects.create(
            batch=batch,
            path=str(path.resolve()),
            card_path=str(card_path.resolve()),
            format=fmt,
            category=category,
            queries=len(rows),
            counts=facts["counts"] | {"set_aside": facts["set aside (disputed or too few votes)"]},
            card=card,
            query_set=query_set,
        )


def export_for_download(batch: Batch, category: str, fmt: str = "tsv", as_query_set: str | None = None) -> Export:
    """Export into the site's own folder for download, under a file name of its own, so that an earlier
    export's download still returns what was exported then."""
    stamp = timezone.now().strftime("%Y%m%dT%H%M%S%f")
    path = cache_dir("exports", batch.name) / f"{batch.name}-{category.lower()}-{stamp}.{fmt}"
    return export_queries(batch, category, path, fmt, as_query_set=as_query_set)

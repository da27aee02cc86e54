"""Registering relevance judgments: a TREC qrels file read, checked against its collection and
query set, and normalised once into Parquet (``qid, docid, rel``), idempotent and all or nothing
as the other imports (:mod:`pooling.services`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from django.db import transaction

from core.errors import ServiceError
from core.services.names import validate_name
from core.services.storage import cache_dir
from genderbias.errors import InputError, Skipped
from genderbias.files.atomic import file_sha256, write_parquet_atomic

from ..models import Collection, Qrels, QuerySet
from ..preview import LineProblems
from ..selectors import read_qrels_checked
from .common import ImportResult


def import_qrels(
    path: str | Path,
    name: str,
    collection: Collection,
    query_set: QuerySet,
    *,
    skip_bad_lines: bool = False,
) -> ImportResult:
    """Register the judgments of ``path`` (``qid 0 docid rel`` lines) of ``query_set`` over ``collection``;
    one of a query or document outside them is a bad line."""
    validate_name(name, "qrels")
    path = Path(path).resolve()
    if not path.is_file():
        raise InputError(path, None, "no such file")
    sha = file_sha256(path)
    existing = Qrels.objects.filter(name=name).first()
    if existing is not None:
        if existing.sha256 == sha and existing.collection_id == collection.pk and existing.query_set_id == query_set.pk:
            return ImportResult(existing, False, Skipped())
        raise ServiceError(
            f"qrels named {name!r} already exist with different content, collection or query set; choose another name"
        )
    skipped = LineProblems(path=path, skip=skip_bad_lines)  # every bad line listed, refused unless skipped
    with skipped.reading():
        frame = read_qrels_checked(path, collection, query_set, skipped)
    mode = "skip" if skip_bad_lines else "strict"
    data_path = cache_dir("qrels") / f"{sha}-{collection.sha256[:16]}-{_queries_key(query_set)[:16]}-{mode}.parquet"
    write_parquet_atomic(frame, data_path)
    with transaction.atomic():
        qrels = Qrels.objects.create(
            name=name,
            collection=collection,
            query_set=query_set,
            path=str(path),
            sha256=sha,
            judgments=len(frame),
            queries=frame["qid"].n_unique(),
            relevant=int((frame["rel"] > 0).sum()),
            data=str(data_path),
        )
    return ImportResult(qrels, True, skipped)


def _queries_key(query_set: QuerySet) -> str:
    """What the checked judgments depend on in ``query_set``: its file's checksum, or its qids' (a pool's);
    never its id, which a database may give again after a deletion."""
    if query_set.sha256:
        return query_set.sha256
    qids = sorted(query_set.queries.values_list("qid", flat=True))
    return hashlib.sha256("\n".join(qids).encode()).hexdigest()

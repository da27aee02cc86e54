"""Registering what the researcher brings (collections, query sets, word lists, datasets), and the
one entry point of the imports for pages, the API and their background task.

Every import is idempotent: the same content under the same name changes nothing, the same name
for different content is refused. The file is checked before a transaction opens; the rows are
written in one. A collection is registered, never copied: only its docid index is written (under
``settings.CACHE_DIR``, moved into place once the import is accepted).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from django.db import transaction
from django.urls import reverse

from core.db import insert_rows
from core.errors import ServiceError
from core.jobs import background_job
from core.models import Job
from core.progress import Progress, shown
from core.services.names import validate_name
from core.services.storage import cache_dir, staging_path
from core.services.uploads import check_import_path
from genderbias.errors import InputError, Skipped
from genderbias.files.atomic import file_sha256
from genderbias.files.docstores import V2PassageFiles
from genderbias.files.queryfiles import ColumnChoiceError, read_query_table
from genderbias.text.wordlists import GenderWords, default_wordlist, load_wordlist

from ..irdatasets import (
    DatasetTexts,
    check_dataset_id,
    dataset_source,
    docs_count,
    folder_name,
    ir_datasets_version,
    write_dataset_files,
)
from ..models import Collection, Query, QuerySet, Run, WordList
from ..preview import LineProblems
from .common import DatasetImport, ImportResult, byte_progress
from .qrels import import_qrels
from .runs import import_run

#: What the site and the API can import, and what each is called in messages.
IMPORT_KINDS = {
    "collection": "collection",
    "queries": "query set",
    "run": "run",
    "wordlist": "word list",
    "qrels": "qrels file",
    "dataset": "dataset",  # of the ir_datasets package, by its id (given as the path)
}


def import_collection(
    path: str | Path,
    name: str,
    *,
    skip_bad_lines: bool = False,
    job: Job | None = None,
    bar: bool = True,
    source: str = "",
) -> ImportResult:
    """Register a passage collection (``source``: where the file came from when the project wrote it,
    e.g. an ir_datasets id); a refused import leaves no docid index behind."""
    from genderbias.files.collection import scan_collection

    validate_name(name, "collection")
    path = Path(path).resolve()
    if not path.is_file():
        raise InputError(path, None, "no such file")
    skipped = LineProblems(path=path, skip=skip_bad_lines)  # every bad line listed, refused unless skipped
    staging = staging_path(f"collection-{path.name}.parquet")
    try:
        with byte_progress(path, f"Scanning {path.name}", job, bar) as progress, skipped.reading():
            scan = scan_collection(path, index_path=staging, progress=progress.update_to, skipped=skipped)
        existing = Collection.objects.filter(name=name).first()
        if existing is not None and existing.sha256 != scan.sha256:
            raise ServiceError(f"a collection named {name!r} already exists with different content ({existing.path})")
        index_path = cache_dir("collections") / f"{scan.sha256}.parquet"
        os.replace(staging, index_path)
    finally:
        staging.unlink(missing_ok=True)
    if existing is not None:
        return ImportResult(existing, False, skipped)
    with transaction.atomic():
        collection = Collection.objects.create(
            name=name,
            path=str(path),
            size=scan.size,
            sha256=scan.sha256,
            passages=scan.passages,
            docid_index=str(index_path),
            source=source,
        )
    return ImportResult(collection, True, skipped)


def check_bundle_folder(value: str, field: str = "path") -> Path:
    """The folder of MS MARCO v2 bundles ``value`` names, if inside ``IMPORT_ROOTS`` once links are
    resolved and its bundles are its own regular files. Raises :class:`ServiceError` naming ``field``."""
    folder = check_import_path(value, field, folder=True)
    try:
        V2PassageFiles(folder)
    except InputError as exc:
        raise ServiceError(f"{field}: {exc}") from None
    return folder


def register_collection_by_reference(location: str | Path, name: str, *, kind: str, source: str = "") -> ImportResult:
    """Register a collection by reference, its texts read by docid when needed
    (:func:`pooling.selectors.collection_texts`).

    ``kind`` ``msmarco-v2``: ``location`` is a folder of MS MARCO v2 passage bundles, fingerprinted
    by :meth:`~genderbias.files.docstores.V2PassageFiles.fingerprint`; ``ir_datasets``: a dataset id
    with a docstore, fingerprinted by the id and the ir_datasets version.
    """
    validate_name(name, "collection")
    if kind == Collection.Kind.MSMARCO_V2:
        folder = Path(location).resolve()
        files = V2PassageFiles(folder)
        sha256, size = files.fingerprint()
        passages, path = files.passages(), str(folder)
    elif kind == Collection.Kind.IR_DATASETS:
        dataset_id = check_dataset_id(str(location))
        DatasetTexts(dataset_id)  # refused here if it has no documents or no docstore
        version = ir_datasets_version()
        source = source or dataset_source(dataset_id, version)
        sha256 = hashlib.sha256(f"ir_datasets:{dataset_id}\t{version}".encode()).hexdigest()
        size, passages, path = 0, docs_count(dataset_id), dataset_id
    else:
        raise ServiceError(f"kind: {kind!r} is not a collection by reference (msmarco-v2 or ir_datasets)")
    existing = Collection.objects.filter(name=name).first()
    if existing is not None:
        if existing.sha256 == sha256 and existing.kind == kind:
            return ImportResult(existing, False, Skipped())
        raise ServiceError(f"a collection named {name!r} already exists with different content ({existing.path})")
    with transaction.atomic():
        collection = Collection.objects.create(
            name=name, kind=kind, path=path, size=size, sha256=sha256, passages=passages, source=source
        )
    return ImportResult(collection, True, Skipped())


def import_queries(
    path: str | Path,
    name: str,
    *,
    skip_bad_lines: bool = False,
    source: str = "",
    description: str = "",
    columns: dict[str, str | int | None] | None = None,
) -> ImportResult:
    """Register a query set from a query file (:func:`genderbias.files.queryfiles.read_query_table`).

    ``columns``: role -> header name or 1-based number, else guessed from the header. With a label
    column the set is labelled: gold questions for a batch, training or test data for a pre-labeller.
    ``source`` defaults to the file's path.
    """
    validate_name(name, "query set")
    path = Path(path).resolve()
    skipped = LineProblems(path=path, skip=skip_bad_lines)  # every bad line listed, refused unless skipped
    with skipped.reading():
        try:
            queries, table = read_query_table(path, columns, skipped=skipped)
        except ColumnChoiceError as exc:  # a column chosen that the file lacks: the choice is named
            raise ServiceError(f"{exc.path}: {exc.problem}") from None
    sha = file_sha256(path)
    existing = QuerySet.objects.filter(name=name).first()
    if existing is not None:
        if existing.sha256 == sha:
            return ImportResult(existing, False, skipped)
        raise ServiceError(f"a query set named {name!r} already exists with different content")
    with transaction.atomic():
        query_set = create_query_set(
            name,
            queries if table.labelled else ((qid, text) for qid, text, _ in queries),
            origin=QuerySet.Origin.IMPORTED,
            source=source or str(path),
            sha256=sha,
            description=description,
        )
    return ImportResult(query_set, True, skipped)


def import_dataset(
    dataset_id: str,
    name: str,
    *,
    skip_bad_lines: bool = False,
    job: Job | None = None,
    bar: bool = True,
    by_reference: bool = False,
) -> ImportResult:
    """Import a dataset of the ``ir_datasets`` package by its id, each part it has under ``name``:
    documents as a collection, queries as a query set, qrels as qrels of both.

    The parts are written once under ``CACHE_DIR/datasets/<id>/`` and imported as a user's files
    would be, each idempotently, so a part that failed is imported by the next try; their source
    records the dataset id and ``ir_datasets`` version. ``by_reference``: the documents are not
    written out but read through the dataset's docstore (:func:`register_collection_by_reference`).
    """
    validate_name(name, "dataset")
    dataset_id = check_dataset_id(dataset_id)
    folder = cache_dir("datasets") / folder_name(dataset_id)
    with Progress(f"Reading {dataset_id} through ir_datasets", unit="records", job=job, bar=bar) as progress:
        files = write_dataset_files(dataset_id, folder, progress.update_to, docs=not by_reference)
    found, notes = DatasetImport(files.dataset_id, files.version), []
    if by_reference:
        found.collection = found.add(
            register_collection_by_reference(dataset_id, name, kind=Collection.Kind.IR_DATASETS, source=files.source)
        )
    if not (files.docs or files.queries or files.qrels or found.collection):
        raise ServiceError(f"dataset: {dataset_id} has no documents, queries or qrels to import")
    if files.docs:
        found.collection = found.add(
            import_collection(files.docs, name, skip_bad_lines=skip_bad_lines, job=job, bar=bar, source=files.source)
        )
    if files.queries:
        found.query_set = found.add(
            import_queries(
                files.queries,
                name,
                skip_bad_lines=skip_bad_lines,
                source=files.source,
                description=f"queries of {files.source}",
            )
        )
    if files.qrels and found.collection is not None and found.query_set is not None:
        found.qrels = found.add(
            import_qrels(files.qrels, name, found.collection, found.query_set, skip_bad_lines=skip_bad_lines)
        )
    elif files.qrels:
        notes.append("qrels not imported: they need both the documents and the queries, and the dataset lacks one")
    for what, part in (
        ("documents", files.docs or found.collection),
        ("queries", files.queries),
        ("qrels", files.qrels),
    ):
        if part is None:
            notes.append(f"the dataset has no {what}")
    return ImportResult(found, found.created, found.skipped, notes)


def create_query_set(
    name: str,
    queries: Iterable[tuple[str, str]] | Iterable[tuple[str, str, str]],
    *,
    origin: str,
    source: str = "",
    sha256: str = "",
    description: str = "",
    licence: str = "",
    citation: str = "",
    categories: Mapping[str, str] | None = None,
) -> QuerySet:
    """The one way a query set comes to be: with its queries, ``(qid, text)`` or ``(qid, text, label
    code)`` (callers hold the transaction); ``categories``: qid -> a named set's categories (``'; '``
    between them)."""
    validate_name(name, "query set")
    if QuerySet.objects.filter(name=name).exists():
        raise ServiceError(f"a query set named {name!r} already exists")
    query_set = QuerySet.objects.create(
        name=name,
        origin=origin,
        source=source,
        sha256=sha256,
        description=description,
        licence=licence,
        citation=citation,
    )
    categories = categories or {}
    insert_rows(
        Query,
        ["query_set_id", "qid", "text", "position", "label", "categories"],
        (
            (query_set.pk, qid, text, i, label[0] if label else "", categories.get(qid, ""))
            for i, (qid, text, *label) in enumerate(queries)
        ),
    )
    return query_set


def register_wordlist(words: GenderWords | None = None) -> WordList:
    """The stored record of a word list (default: the definitional words), keyed by content."""
    words = words or default_wordlist()
    record, _ = WordList.objects.get_or_create(sha256=words.sha256, defaults={"name": words.name, "words": words.words})
    return record


def import_wordlist(path: str | Path, name: str) -> ImportResult:
    """Register a ``word,f|m`` word list under ``name`` (the same content twice changes nothing)."""
    validate_name(name, "word list")
    words = load_wordlist(Path(path).resolve(), name)
    existing = WordList.objects.filter(sha256=words.sha256).first()
    if existing is not None:
        return ImportResult(existing, False, Skipped())
    return ImportResult(register_wordlist(words), True, Skipped())


def import_file(
    kind: str, path: str | Path, name: str, options: dict, *, job: Job | None = None, bar: bool = True
) -> ImportResult:
    """One entry point of the imports for pages, the API and their task (``options``: ``skip_bad_lines``;
    runs ``collection``, ``order``; qrels ``collection``, ``queries``; collections, datasets ``by_reference``)."""
    skip = bool(options.get("skip_bad_lines"))
    if kind == "collection" and options.get("by_reference"):
        return register_collection_by_reference(path, name, kind=Collection.Kind.MSMARCO_V2)
    if kind == "collection":
        return import_collection(path, name, skip_bad_lines=skip, job=job, bar=bar)
    if kind == "queries":
        return import_queries(path, name, skip_bad_lines=skip, columns=options.get("columns"))
    if kind == "run":
        collection = _named(Collection, "collection", options)
        return import_run(path, name, collection, order=options.get("order", Run.Order.SCORE), skip_bad_lines=skip)
    if kind == "wordlist":
        return import_wordlist(path, name)
    if kind == "qrels":
        collection, query_set = _named(Collection, "collection", options), _named(QuerySet, "queries", options)
        return import_qrels(path, name, collection, query_set, skip_bad_lines=skip)
    if kind == "dataset":  # ``path`` is the dataset's id
        return import_dataset(
            str(path), name, skip_bad_lines=skip, job=job, bar=bar, by_reference=bool(options.get("by_reference"))
        )
    raise ServiceError(f"unknown import kind {kind!r}; choose one of {', '.join(IMPORT_KINDS)}")


def _named(model, option: str, options: dict):
    """The stored ``model`` named by ``options[option]``; a :class:`ServiceError` naming the option if none."""
    found = model.objects.filter(name=options.get(option, "")).first()
    if found is None:
        what = model._meta.verbose_name
        raise ServiceError(f"{option}: no {what} named {options.get(option)!r}; import it first")
    return found


@background_job("import", task="pooling.tasks.import_task", failures=(InputError, ServiceError, OSError))
def import_job(job: Job, kind: str, path: str, name: str, options: dict, uploaded: bool) -> str:
    """Import one file; bad input or a refused request fails the job (no retry can fix it).

    An uploaded file is removed when the import fails or finds its content already there, except
    on a redelivery: the delivery that died may have imported this very file.
    """
    # An upload is kept as uploads/<12 hex>-<its name> (core.services.uploads.keep_upload).
    shown_as = options.get("file_name") or (re.sub(r"^[0-9a-f]{12}-", "", Path(path).name) if uploaded else str(path))
    # Messages name the file as the user did (core.progress.shown); a dataset's id is no path to hide.
    job.shown_names = (
        {}
        if kind == "dataset"
        else {str(Path(path).resolve()): shown_as, str(path): shown_as, Path(path).name: shown_as}
    )
    job.result = {"form": reverse("pooling:import-create", args=[kind]), "file": shown_as}  # to try again
    job.save(update_fields=["result"])
    keep = False
    try:
        result = import_file(kind, path, name, options, job=job, bar=False)
        keep = result.created or job.redelivered
        what = IMPORT_KINDS[kind]
        job.message = f"{'Imported' if result.created else 'Already imported (unchanged)'}: {what} {name}"
        job.message += f"; {result.outcome()}"
        if result.skipped:
            job.message += f"; first bad line skipped: {shown(job, str(result.skipped.errors[0]))}"
        if kind in ("dataset", "run"):  # a run's notes: its format, and what became of its tied scores
            job.message += "".join(f"; {note}" for note in result.notes)
        url = reverse("home") + f"#{'collection' if kind == 'dataset' else kind}"
        if kind == "queries":
            labelled = result.obj.queries.exclude(label="").count()
            if labelled:
                job.message += f"; {labelled:,} labelled: {labels_use(name, options.get('labels_as', ''))}"
                if options.get("labels_as") == "gold":
                    url = reverse("annotation:batch-create") + f"?gold_set={name}"
        job.result = {kind: name, "created": result.created, "url": url, "file": shown_as, **result.counts()}
    except (InputError, ServiceError, OSError) as exc:
        raise ServiceError(shown(job, str(exc))) from None
    finally:
        if uploaded and not keep:
            Path(path).unlink(missing_ok=True)
    return name


def labels_use(name: str, labels_as: str) -> str:
    """Where a labelled query set's labels go next, in words (the job's message)."""
    gold = f"gold questions of a new batch (its form's “gold from a labelled query set”, or --gold queries:{name})"
    test = f"a pre-labeller's training or test data (Train on queries:{name}; route_audit --labels queries:{name})"
    if labels_as == "gold":
        return f"use them as {gold}"
    if labels_as == "test":
        return f"use them as {test}"
    return f"they can be {gold} or {test}"


def start_import(
    kind: str, path: str | Path, name: str, options: dict, *, uploaded: bool = False, file_name: str = ""
) -> Job:
    """Import a file in the background once the caller's transaction commits; returns its Job.

    ``uploaded``: the file was uploaded for this import (see :func:`import_job`); ``file_name``:
    the name the uploader gave it.
    """
    if kind not in IMPORT_KINDS:
        raise ServiceError(f"unknown import kind {kind!r}; choose one of {', '.join(IMPORT_KINDS)}")
    validate_name(name, IMPORT_KINDS[kind])
    if kind == "dataset":
        path = file_name = check_dataset_id(str(path))
    return import_job.start(
        f"Import {IMPORT_KINDS[kind]} {name} from {file_name or Path(path).name}",
        kind,
        str(path),
        name,
        dict(options),
        uploaded,
    )

"""Registering what the researcher brings: collections, query sets and word lists, and the
one entry point of the imports for pages, the API and their background task.

Every import is idempotent: the same content under the same name changes nothing, the
same name for different content is refused. The file is read and checked before a
transaction opens; the rows are written in one transaction. A collection is registered,
never copied: its text stays in its file, and only its docid index is written (under
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
    """Register a passage collection (the text stays in its file; ``source``: where the file
    came from when the project wrote it, e.g. an ir_datasets id).

    Importing the same file under the same name again changes nothing; the same name
    for different content is refused, and leaves no docid index behind. The index is
    written to a staging file and moved into place only once the import is accepted.
    """
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
    """The folder of MS MARCO v2 bundles ``value`` names, if the site may read it: inside
    ``IMPORT_ROOTS`` once links are resolved (:func:`core.services.uploads.check_import_path`) and its
    bundles the folder's own regular files (:class:`genderbias.files.docstores.V2PassageFiles`: a
    link to a file elsewhere is refused, not followed). Raises :class:`ServiceError` naming ``field``."""
    folder = check_import_path(value, field, folder=True)
    try:
        V2PassageFiles(folder)
    except InputError as exc:
        raise ServiceError(f"{field}: {exc}") from None
    return folder


def register_collection_by_reference(location: str | Path, name: str, *, kind: str, source: str = "") -> ImportResult:
    """Register a collection by reference: nothing of it is read but what names it. Its texts are read
    by docid when a pool or a report needs them (:func:`pooling.selectors.collection_texts`).

    ``kind`` ``msmarco-v2``: ``location`` is a folder of MS MARCO v2 passage bundles
    (:class:`genderbias.files.docstores.V2PassageFiles`); its sha256 is of the bundles' names, sizes
    and first and last 64 KiB. ``ir_datasets``: ``location`` is a dataset id whose docstore reads
    documents by id; its sha256 is of the id and the ir_datasets version. Idempotent as every import.
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
    """Register a query set (idempotent, all or nothing) from a query file: ``qid<TAB>query``
    lines, or a CSV or TSV with a header, or the study's ``qid,query,label``
    (:func:`genderbias.files.queryfiles.read_query_table`).

    ``columns``: which column is the id, the query and the label (role -> header name or
    1-based number), else guessed from the header. A label column's values are read with the
    one label vocabulary and kept with the queries: the set is then a labelled query set,
    which a batch can take as gold questions and a pre-labeller as training or test data.
    ``source`` (default: the file's path) and ``description`` are recorded with it.
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
    its documents as a collection, its queries as a query set, its qrels as qrels of both.

    ``ir_datasets`` downloads and caches the dataset itself (``IR_DATASETS_HOME``, default
    ``~/.ir_datasets``); its parts are written once as the project's files under
    ``CACHE_DIR/datasets/<id>/`` (the collection is registered there, as a file of the user's
    would be) and imported through :func:`import_collection`, :func:`import_queries` and
    :func:`import_qrels`, each idempotent: importing again changes nothing, and a part that
    failed is imported by the next try. The collection and query set record the dataset id
    and the ``ir_datasets`` version as their source. A failed download is a
    :class:`ServiceError` saying this machine may be offline.

    ``by_reference``: the documents are not written out: the collection is registered by
    reference (:func:`register_collection_by_reference`, kind ``ir_datasets``) and its texts read
    through the dataset's docstore, by id, as pools and reports ask for them.
    """
    validate_name(name, "dataset")
    dataset_id = check_dataset_id(dataset_id)
    folder = cache_dir("datasets") / folder_name(dataset_id)
    with Progress(f"Reading {dataset_id} through ir_datasets", unit="records", job=job, bar=bar) as progress:
        files = write_dataset_files(dataset_id, folder, progress.update_to, docs=not by_reference)
    found = DatasetImport(files.dataset_id, files.version)
    skipped, created, notes = Skipped(), False, []
    if by_reference:
        result = register_collection_by_reference(
            dataset_id, name, kind=Collection.Kind.IR_DATASETS, source=files.source
        )
        found.collection, created = result.obj, result.created
    if not (files.docs or files.queries or files.qrels or found.collection):
        raise ServiceError(f"dataset: {dataset_id} has no documents, queries or qrels to import")

    def add(result: ImportResult) -> object:
        nonlocal created
        created = created or result.created
        skipped.errors.extend(result.skipped.errors)
        return result.obj

    if files.docs:
        found.collection = add(
            import_collection(files.docs, name, skip_bad_lines=skip_bad_lines, job=job, bar=bar, source=files.source)
        )
    if files.queries:
        found.query_set = add(
            import_queries(
                files.queries,
                name,
                skip_bad_lines=skip_bad_lines,
                source=files.source,
                description=f"queries of {files.source}",
            )
        )
    if files.qrels and found.collection is not None and found.query_set is not None:
        found.qrels = add(
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
    return ImportResult(found, created, skipped, notes)


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
    """Create a query set with its queries, ``(qid, text)`` or ``(qid, text, label code)``
    (callers hold the transaction); ``categories``: qid -> a named set's categories of the query
    (``'; '`` between them), ``licence`` and ``citation`` the named set's.

    The one way a query set comes to be: imported, pooled, exported from a batch, or
    made by a benchmark or a test.
    """
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
    """The stored record of a word list (default: the 32 + 32 definitional words).

    Records are keyed by content: pools and reports that used the same words share one.
    """
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
    """One entry point of the imports (``options``: ``skip_bad_lines``; for runs ``collection``
    and ``order``; for qrels ``collection`` and ``queries``; for a collection or a dataset
    ``by_reference``: a folder of MS MARCO v2 bundles, or the dataset's docstore, registered without
    reading it), as pages, the API and their background task call them."""
    skip = bool(options.get("skip_bad_lines"))
    if kind == "collection" and options.get("by_reference"):
        return register_collection_by_reference(path, name, kind=Collection.Kind.MSMARCO_V2)
    if kind == "collection":
        return import_collection(path, name, skip_bad_lines=skip, job=job, bar=bar)
    if kind == "queries":
        return import_queries(path, name, skip_bad_lines=skip, columns=options.get("columns"))
    if kind == "run":
        collection = Collection.objects.filter(name=options.get("collection", "")).first()
        if collection is None:
            raise ServiceError(f"collection: no collection named {options.get('collection')!r}; import it first")
        return import_run(path, name, collection, order=options.get("order", Run.Order.SCORE), skip_bad_lines=skip)
    if kind == "wordlist":
        return import_wordlist(path, name)
    if kind == "qrels":
        collection = Collection.objects.filter(name=options.get("collection", "")).first()
        if collection is None:
            raise ServiceError(f"collection: no collection named {options.get('collection')!r}; import it first")
        query_set = QuerySet.objects.filter(name=options.get("queries", "")).first()
        if query_set is None:
            raise ServiceError(f"queries: no query set named {options.get('queries')!r}; import it first")
        return import_qrels(path, name, collection, query_set, skip_bad_lines=skip)
    if kind == "dataset":  # ``path`` is the dataset's id
        return import_dataset(
            str(path), name, skip_bad_lines=skip, job=job, bar=bar, by_reference=bool(options.get("by_reference"))
        )
    raise ServiceError(f"unknown import kind {kind!r}; choose one of {', '.join(IMPORT_KINDS)}")


@background_job("import", task="pooling.tasks.import_task", failures=(InputError, ServiceError, OSError))
def import_job(job: Job, kind: str, path: str, name: str, options: dict, uploaded: bool) -> str:
    """Import one file; bad input or a refused request fails the job (no retry can fix it).

    Importing is idempotent (the same content is found already imported). An uploaded
    file is removed when the import fails or finds its content already there, except on
    a redelivery: the delivery that died may have imported this very file.
    """
    # An upload is kept as uploads/<12 hex>-<its name> (core.services.uploads.keep_upload); a path was given by the user.
    shown_as = options.get("file_name") or (re.sub(r"^[0-9a-f]{12}-", "", Path(path).name) if uploaded else str(path))
    # Messages name the file as the user did, never its staging or cache path (core.progress.shown). A
    # dataset's id is no path: nothing to hide, and its last segment may be a word of the messages ("dataset").
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

    ``uploaded``: the file was uploaded for this import (under ``uploads/``); it is removed
    if the import fails or finds the same content already imported, and kept otherwise
    (a collection stays in its file). ``file_name``: the name the uploader gave the file.
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

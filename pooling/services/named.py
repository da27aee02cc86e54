"""Importing the field's own data sets by name (:mod:`genderbias.datasets`): one call makes every
part a set has, from the files bundled with the product; no network.

``grep-biasir`` brings its documents (written once under ``CACHE_DIR/named_sets/``, its own ids as
docids), queries and judgments, all under one name. The MS MARCO sets bring queries only: their
passages cannot be shipped, so the user's collection (a file or a registered name) and qrels are
registered beside them when given; else the import says what is missing.

Each part goes through the ordinary, idempotent import of its kind; the query set records the
set's source, licence and citation. The sets' known faults are repaired and listed, with file and
line, in the result's notes.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.urls import reverse

from core.errors import FieldError, ServiceError
from core.jobs import background_job
from core.models import Job
from core.services.names import validate_name
from core.services.storage import cache_dir
from genderbias.datasets import NamedQuery, NamedSet, SetContents, bundled_file, named_set, read_named_set
from genderbias.errors import InputError, Skipped
from genderbias.files.atomic import atomic_path, atomic_write, file_sha256

from ..models import Collection, QuerySet
from .common import ImportedParts, ImportResult
from .imports import create_query_set, import_collection
from .pools import write_query_file
from .qrels import import_qrels


@dataclass
class NamedSetImport(ImportedParts):
    """What a named set's import registered (``None``: a part the set lacks or the user did not bring)."""

    named: NamedSet
    #: Each known fault repaired or set aside, ``file:line: what``.
    faults: list[str] = field(default_factory=list)
    #: What the set needs that the product cannot ship and the user did not give.
    missing: list[str] = field(default_factory=list)


def check_named_set(key: str) -> NamedSet:
    """The set called ``key``, or a :class:`FieldError` naming the known ones (field ``set``)."""
    try:
        return named_set(key)
    except KeyError as exc:
        raise FieldError("set", exc.args[0]) from None


def check_named_import(key: str, name: str, collection: object, qrels: object) -> NamedSet:
    """Every rule of a named set's import request, checked once for command, page and API: the set is
    known, the name valid, the user's files only where the set lacks them, judgments only with their
    collection."""
    named = check_named_set(key)
    validate_name(name or named.key, "named set")
    if named.key == "grep-biasir" and (collection or qrels):
        raise FieldError("collection", "Grep-BiasIR brings its own documents and judgments; give neither")
    if qrels and not collection:
        raise FieldError("qrels", "judgments need the collection they are about: give the collection too")
    return named


def import_named_set(
    key: str,
    name: str = "",
    *,
    collection: str | Path | None = None,
    qrels: str | Path | None = None,
    job: Job | None = None,
    bar: bool = True,
) -> ImportResult:
    """Import the named set ``key`` under ``name`` (default: its key) with everything it has;
    ``collection`` and ``qrels``: the user's, for a set whose passages cannot be shipped."""
    named = check_named_import(key, name, collection, qrels)
    name = name or named.key
    found = NamedSetImport(named)
    contents = read_named_set(named.key)
    found.faults = list(contents.notes)
    if named.key == "grep-biasir":
        folder = cache_dir("named_sets") / named.key
        documents, judgments = _write_grep_files(contents, folder)
        found.collection = found.add(import_collection(documents, name, job=job, bar=bar, source=named.source_text))
    found.query_set = found.add(_import_query_set(named, name, contents.queries))
    if named.key == "grep-biasir":
        found.qrels = found.add(import_qrels(judgments, name, found.collection, found.query_set))
        return ImportResult(found, found.created, found.skipped, _notes(found))
    if collection:
        found.collection = found.add(_user_collection(collection, name, job=job, bar=bar))
        if qrels:
            found.qrels = found.add(import_qrels(qrels, name, found.collection, found.query_set))
    else:
        found.missing.append(named.needs)
    return ImportResult(found, found.created, found.skipped, _notes(found))


def write_named_set_files(found: NamedSetImport, out: str | Path) -> list[Path]:
    """The imported set's texts as files your own system ranks, written into the folder ``out``:
    ``queries.tsv`` and, where the set brings them, ``collection.tsv`` (the bytes the collection was
    imported from: the docids a run must use) and ``qrels.txt``. Returns the files written."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    if found.query_set is not None:
        write_query_file(found.query_set, folder / "queries.tsv")
        written.append(folder / "queries.tsv")
    if found.collection is not None and found.named.key == "grep-biasir":
        for part, file_name in ((found.collection, "collection.tsv"), (found.qrels, "qrels.txt")):
            if part is None:
                continue
            with atomic_path(folder / file_name) as tmp:  # copied a block at a time, never held whole
                shutil.copyfile(part.path, tmp)
            written.append(folder / file_name)
    return written


def _notes(found: NamedSetImport) -> list[str]:
    notes = [f"{len(found.faults)} known fault(s) of the set repaired or set aside:", *found.faults]
    if not found.faults:
        notes = []
    notes += [f"not imported: {what}" for what in found.missing]
    return notes


def _write_grep_files(contents: SetContents, folder: Path) -> tuple[Path, Path]:
    """Grep-BiasIR's documents and judgments as the project's files (the same bytes every time, so a
    second import finds them imported)."""
    folder.mkdir(parents=True, exist_ok=True)
    documents = atomic_write(
        folder / "collection.tsv",
        lambda out: out.writelines(f"{d.docid}\t{d.passage}\n" for d in contents.documents),
        newline="\n",
    )
    judgments = atomic_write(
        folder / "qrels.txt",
        lambda out: out.writelines(f"{d.qid} 0 {d.docid} {d.relevant}\n" for d in contents.documents),
        newline="\n",
    )
    return documents, judgments


def _import_query_set(named: NamedSet, name: str, queries: Sequence[NamedQuery]) -> ImportResult:
    """The set's queries as a query set with categories and labels, its source, licence and citation."""
    sha = file_sha256(bundled_file(named.key))
    existing = QuerySet.objects.filter(name=name).first()
    if existing is not None:
        if existing.sha256 == sha and existing.source == named.source_text:
            return ImportResult(existing, False, Skipped())
        raise ServiceError(f"a query set named {name!r} already exists with different content; choose another name")
    labelled = any(q.label for q in queries)
    with transaction.atomic():
        query_set = create_query_set(
            name,
            ((q.qid, q.text, q.label) if labelled else (q.qid, q.text) for q in queries),
            origin=QuerySet.Origin.IMPORTED,
            source=named.source_text,
            sha256=sha,
            description=named.title,
            licence=named.licence,
            citation=named.citation,
            categories={q.qid: "; ".join(q.categories) for q in queries if q.categories},
        )
    return ImportResult(query_set, True, Skipped())


def _user_collection(collection: str | Path, name: str, *, job: Job | None, bar: bool) -> ImportResult:
    """The user's passages: a collection registered by that name, else a file registered under ``name``."""
    registered = Collection.objects.filter(name=str(collection)).first()
    if registered is not None:
        return ImportResult(registered, False, Skipped())
    path = Path(collection)
    if not path.is_file():
        raise InputError(path, None, "no such file, and no collection registered by that name")
    return import_collection(path, name, job=job, bar=bar)


def named_set_outcome(result: ImportResult) -> str:
    """What an import made, in one line (a job's message, a command's summary)."""
    found: NamedSetImport = result.obj
    made = [
        f"{what} {part.name}"
        for what, part in (("collection", found.collection), ("query set", found.query_set), ("qrels", found.qrels))
        if part is not None
    ]
    state = "Imported" if result.created else "Already imported (unchanged)"
    return f"{state}: {found.named.key} as {', '.join(made)}"


@background_job("import.named_set", task="pooling.tasks.named_set_task", failures=(InputError, ServiceError, OSError))
def named_set_job(job: Job, key: str, name: str, collection: str, qrels: str) -> None:
    """Import a named set (a redelivery finds it imported); the result lists faults and what is missing."""
    result = import_named_set(key, name, collection=collection or None, qrels=qrels or None, job=job, bar=False)
    found: NamedSetImport = result.obj
    job.message = named_set_outcome(result)
    if found.faults:
        job.message += f"; {len(found.faults)} known fault(s) repaired or set aside (listed on the page)"
    if found.missing:
        job.message += "; not imported: " + "; ".join(found.missing)
    job.result = {
        "set": key,
        "query_set": found.query_set.name if found.query_set is not None else None,
        "created": result.created,
        "faults": found.faults,
        "missing": found.missing,
        "url": reverse("pooling:named-sets"),
    }


def start_named_set(key: str, name: str = "", *, collection: str = "", qrels: str = "") -> Job:
    """Import a named set in the background once the caller's transaction commits (the page, the API)."""
    named = check_named_import(key, name, collection, qrels)
    return named_set_job.start(
        f"Import named set {named.key} as {name or named.key}", named.key, name, collection, qrels
    )

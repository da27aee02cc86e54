"""A dataset of the ``ir_datasets`` package written out as the project's files. Pure module (no Django).

``ir_datasets`` (https://ir-datasets.com) knows the standard test collections by id
(``msmarco-passage/dev/small``) and downloads and caches each one itself, under
``IR_DATASETS_HOME`` (default ``~/.ir_datasets``). :func:`write_dataset_files` reads the
parts the dataset has and writes them in the formats the imports read: the documents as a
``pid<TAB>passage`` collection file, the queries as ``qid<TAB>query``, the judgments as
TREC qrels (``qid 0 docid rel``). Tabs and line breaks inside a text become spaces. Each
file is written atomically and reused when already there (a dataset's content does not
change under its id), so a retried import does not read the dataset again.

A download that fails (this machine offline, a URL refused) is a :class:`ServiceError`
saying so, never a traceback. ``ir_datasets`` is imported inside the functions (it loads
numpy and registers hundreds of datasets: half a second).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from core.errors import ServiceError
from genderbias.files.atomic import atomic_write

#: What an ir_datasets id looks like (``msmarco-passage/dev/small``, ``beir/scifact/test``).
DATASET_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*(/[A-Za-z0-9_.\-]+)*$")
_SPACES = re.compile(r"[\t\r\n\v\f]+")


@dataclass(frozen=True)
class DatasetFiles:
    """The files written for one dataset; ``None`` for a part the dataset lacks."""

    dataset_id: str
    version: str  # of the ir_datasets package that read it
    docs: Path | None
    queries: Path | None
    qrels: Path | None

    @property
    def source(self) -> str:
        """What the imported objects record as their source: ``ir_datasets:<id> (ir_datasets <version>)``."""
        return dataset_source(self.dataset_id, self.version)


def dataset_source(dataset_id: str, version: str) -> str:
    return f"ir_datasets:{dataset_id} (ir_datasets {version})"


def check_dataset_id(dataset_id: str) -> str:
    """The id, stripped, if ``ir_datasets`` knows it; a :class:`ServiceError` naming the field otherwise.

    The page, the API, the command and the service all check here, so an id ``ir_datasets`` does not
    know (``nosuch/dataset``) is refused before a job is made, not by the job. Membership only: the
    registry is asked whether it has the id, nothing is loaded or downloaded."""
    dataset_id = str(dataset_id).strip()
    if not DATASET_ID.match(dataset_id) or ".." in dataset_id or len(dataset_id) > 200:
        raise ServiceError(f"dataset: {dataset_id!r} is not an ir_datasets id (such as msmarco-passage/dev/small)")
    if not _registered(dataset_id):
        raise ServiceError(unknown_message(dataset_id))
    return dataset_id


def unknown_message(dataset_id: str) -> str:
    return (
        f"dataset: ir_datasets {ir_datasets_version()} has no dataset {dataset_id!r} "
        "(the ids are listed at https://ir-datasets.com)"
    )


def _registered(dataset_id: str) -> bool:
    """Whether ``ir_datasets.registry`` has ``dataset_id``: one of its registered ids, or one its id
    patterns make on first use (clirmatrix's language pairs). The registry has no public membership
    test (``in`` iterates its registered ids only), hence its ``_patterns``, read and never called."""
    import ir_datasets

    registry = ir_datasets.registry
    if dataset_id in set(registry):
        return True
    return any(pattern.match(dataset_id) for pattern, _ in getattr(registry, "_patterns", ()))


def folder_name(dataset_id: str) -> str:
    """One path segment for a dataset's files (``msmarco-passage~dev~small``)."""
    return check_dataset_id(dataset_id).replace("/", "~")


def offline_message(dataset_id: str, reason: object) -> str:
    reason = " ".join(str(reason).split())[:500] or type(reason).__name__
    return (
        f"ir_datasets could not download {dataset_id}: {reason}; this machine may be offline — download it "
        "on a connected machine and copy ~/.ir_datasets, or set IR_DATASETS_HOME"
    )


def ir_datasets_version() -> str:
    import ir_datasets

    return ir_datasets.__version__


def load_dataset(dataset_id: str):
    """The ``ir_datasets`` dataset of ``dataset_id`` (nothing is downloaded yet)."""
    import ir_datasets

    dataset_id = check_dataset_id(dataset_id)
    try:
        return ir_datasets.load(dataset_id)
    except KeyError:  # a pattern's id its initializer refuses
        raise ServiceError(unknown_message(dataset_id)) from None


def write_dataset_files(
    dataset_id: str, folder: Path, progress: Callable[[int], None] | None = None, *, docs: bool = True
) -> DatasetFiles:
    """Write the documents, queries and qrels of ``dataset_id`` (those it has) into ``folder``.

    ``progress(n)`` is called with the number of records written so far (documents first).
    ``docs=False``: the documents are not written (a collection by reference reads them by id
    through :class:`DatasetTexts`).
    """
    write_docs = docs
    dataset = load_dataset(dataset_id)
    folder.mkdir(parents=True, exist_ok=True)
    written = [0]

    def count(records: Iterable) -> Iterator:
        for record in records:
            yield record
            written[0] += 1
            if progress is not None and written[0] % 10_000 == 0:
                progress(written[0])

    docs = queries = qrels = None
    if dataset.has_docs() and write_docs:
        docs = _write(
            folder / "docs.tsv",
            (f"{_clean(d.doc_id)}\t{_clean(_text(d))}\n" for d in count(_guarded(dataset.docs_iter, dataset_id))),
        )
    if dataset.has_queries():
        queries = _write(
            folder / "queries.tsv",
            (f"{_clean(q.query_id)}\t{_clean(_text(q))}\n" for q in count(_guarded(dataset.queries_iter, dataset_id))),
        )
    if dataset.has_qrels():
        qrels = _write(
            folder / "qrels.txt",
            (
                f"{_clean(j.query_id)} 0 {_clean(j.doc_id)} {int(j.relevance)}\n"
                for j in count(_guarded(dataset.qrels_iter, dataset_id))
            ),
        )
    if progress is not None:
        progress(written[0])
    return DatasetFiles(check_dataset_id(dataset_id), ir_datasets_version(), docs, queries, qrels)


class DatasetTexts:
    """A dataset's docstore (``docs_store().get_many``) giving each document's text exactly as
    :func:`write_dataset_files` writes it to the collection file (``default_text()``, line breaks and
    tabs as spaces, stripped), so a collection by reference and the same dataset written out have the
    same texts and the same figures. ``ir_datasets`` builds its docstore on first use (for most
    datasets a pass over the download, once, in its own cache)."""

    def __init__(self, dataset_id: str) -> None:
        self.dataset_id = check_dataset_id(dataset_id)
        dataset = load_dataset(self.dataset_id)
        if not dataset.has_docs():
            raise ServiceError(f"dataset: {self.dataset_id} has no documents")
        try:
            self.store = dataset.docs_store()
        except (NotImplementedError, AttributeError):
            raise ServiceError(f"dataset: {self.dataset_id} has no docstore to read documents by id") from None

    def get_many(self, ids: Iterable[str]) -> dict[str, str]:
        try:
            found = self.store.get_many(list(ids))
        except OSError as exc:
            raise ServiceError(offline_message(self.dataset_id, exc)) from None
        return {str(docid): _clean(_text(document)) for docid, document in found.items()}


def docs_count(dataset_id: str) -> int | None:
    """How many documents the dataset says it has (None when it cannot say without reading them)."""
    try:
        count = load_dataset(dataset_id).docs_count()
    except Exception:
        return None
    return int(count) if count is not None else None


def _write(path: Path, lines: Iterable[str]) -> Path:
    if path.is_file():
        return path  # written whole by an earlier import (atomically): the same id, the same content
    return atomic_write(path, lambda handle: handle.writelines(lines))


def _guarded(records: Callable[[], Iterable], dataset_id: str) -> Iterator:
    """The records of ``records()``. A failed download (raised while reading them: requests'
    errors and a missing or corrupt file are ``OSError``, several failed mirrors a
    ``RuntimeError``) becomes a :class:`ServiceError` with :func:`offline_message`; a record
    ir_datasets cannot parse, one saying so. Errors of the caller's own writing are not
    raised here and pass unchanged."""
    try:
        iterator = iter(records())
        while True:
            try:
                record = next(iterator)
            except StopIteration:
                return
            yield record
    except GeneratorExit:
        raise
    except OSError as exc:
        raise ServiceError(offline_message(dataset_id, exc)) from None
    except RuntimeError as exc:
        if exc.args and exc.args[0] == "All download sources failed":
            raise ServiceError(offline_message(dataset_id, exc.args[1:] or exc)) from None
        raise ServiceError(f"ir_datasets could not read {dataset_id}: {exc}") from None
    except ValueError as exc:
        raise ServiceError(f"ir_datasets could not read {dataset_id}: {exc}") from None


def _text(record) -> str:
    """A document's or query's text: ``default_text()`` where the record has it (title and body
    joined, for instance), else its ``text`` field."""
    if hasattr(record, "default_text"):
        return record.default_text()
    return getattr(record, "text", "")


def _clean(value: object) -> str:
    return _SPACES.sub(" ", str(value)).strip()

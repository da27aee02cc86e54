"""A dataset of the ``ir_datasets`` package (https://ir-datasets.com; it downloads and caches each
itself, under ``IR_DATASETS_HOME``) written out as the project's files. Pure module (no Django).

:func:`write_dataset_files` writes the parts a dataset has in the formats the imports read
(``pid<TAB>passage``, ``qid<TAB>query``, TREC qrels), tabs and line breaks as spaces; each file is
written atomically and reused when there (a dataset does not change under its id). A failed
download is a :class:`ServiceError` saying so. ``ir_datasets`` is imported inside the functions:
it registers hundreds of datasets on import.
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
    """The id, stripped, if ``ir_datasets`` knows it (nothing loaded or downloaded), so an unknown id is
    refused before a job is made; a :class:`ServiceError` naming the field otherwise."""
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
    """Whether ``ir_datasets.registry`` has ``dataset_id``, registered or made by an id pattern on first
    use (no public membership test covers those, hence ``_patterns``, read and never called)."""
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
    """Write the documents (unless ``docs=False``), queries and qrels of ``dataset_id`` (those it has)
    into ``folder``; ``progress(n)`` gets the number of records written so far."""
    dataset = load_dataset(dataset_id)
    folder.mkdir(parents=True, exist_ok=True)
    written = [0]

    def count(records: Iterable) -> Iterator:
        for record in records:
            yield record
            written[0] += 1
            if progress is not None and written[0] % 10_000 == 0:
                progress(written[0])

    files: dict[str, Path | None] = {}
    for part, file_name, line in (
        ("docs", "docs.tsv", lambda d: f"{_clean(d.doc_id)}\t{_clean(_text(d))}\n"),
        ("queries", "queries.tsv", lambda q: f"{_clean(q.query_id)}\t{_clean(_text(q))}\n"),
        ("qrels", "qrels.txt", lambda j: f"{_clean(j.query_id)} 0 {_clean(j.doc_id)} {int(j.relevance)}\n"),
    ):
        files[part] = None
        if getattr(dataset, f"has_{part}")() and (docs or part != "docs"):  # has_docs() and docs_iter(), …
            records = count(_guarded(getattr(dataset, f"{part}_iter"), dataset_id))
            files[part] = _write(folder / file_name, map(line, records))
    if progress is not None:
        progress(written[0])
    return DatasetFiles(check_dataset_id(dataset_id), ir_datasets_version(), **files)


class DatasetTexts:
    """A dataset's docstore giving each document's text exactly as :func:`write_dataset_files` writes
    it, so a collection by reference and the same dataset written out have the same figures."""

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
    """The records of ``records()``, a failed download (``OSError``, or ``RuntimeError`` for failed
    mirrors) raised as a :class:`ServiceError` with :func:`offline_message`, a record ir_datasets
    cannot parse as one saying so."""
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
    """A document's or query's text: ``default_text()`` where the record has it, else its ``text``."""
    if hasattr(record, "default_text"):
        return record.default_text()
    return getattr(record, "text", "")


def _clean(value: object) -> str:
    return _SPACES.sub(" ", str(value)).strip()

"""The field's own data sets by name (:data:`NAMED_SETS`; docs/metrics.md, "The field's data sets by name"): what
each is, where it came from, and its readers. Pure. The files are bundled under ``genderbias/datasets/data/``
with their licences; texts that cannot be shipped (MS MARCO's) are named in :attr:`NamedSet.needs`. The readers
repair the sets' known faults and note each with file and line (:class:`Notes`) rather than stop.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from genderbias.datasets.readers import Document, NamedQuery, SetContents, read_cpjku, read_grep_biasir
from genderbias.files.queryfiles import read_query_table

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DATA_DIR", "NAMED_SETS", "SOURCE_PREFIX", "NamedQuery", "NamedSet", "SetContents", "bundled_file", "load",
    "named_set", "read_named_set", "set_of_source", "wording_variants",
]  # fmt: skip

#: Where the bundled sets are (each folder with its licence file; ``NOTICE`` names the sources, ``sets.toml``
#: describes them: :data:`NAMED_SETS`).
DATA_DIR = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class NamedSet:
    """One of the field's data sets: what it holds, where it came from, its licence and citation."""

    key: str  #: the name a command and the page take (``grep-biasir``)
    title: str
    short: str  #: how a sentence names it (the methods text, the cards)
    folder: str  #: its folder under :data:`DATA_DIR`
    files: tuple[str, ...]  #: the files read, in the folder
    source: str  #: the repository and commit the files are copied from
    url: str
    licence: str  #: SPDX identifier
    citation_key: str  #: its entry in ``publishing.bibliography``
    citation: str  #: BibTeX
    has: tuple[str, ...]  #: what an import makes: queries, categories, labels, documents, qrels
    needs: str = ""  #: what the user must bring (texts that cannot be shipped), in words
    queries: int = 0  #: how many queries it has (what the import should make)

    @property
    def source_text(self) -> str:
        """``named-set:<key> (<source>, <licence>)``: a query set's and collection's ``source``."""
        return f"{SOURCE_PREFIX}{self.key} ({self.source}, {self.licence})"


#: How a query set's or collection's ``source`` names the set it came from.
SOURCE_PREFIX = "named-set:"


def _registry(path: Path) -> dict[str, NamedSet]:
    """The sets of ``sets.toml`` (beside their folders): its ``citations`` and ``needs`` filled in by key."""
    with path.open("rb") as file:
        table = tomllib.load(file)
    sets = {}
    for key, fields in table["sets"].items():
        fields |= {name: tuple(fields[name]) for name in ("files", "has")}
        citation = table["citations"][fields["citation_key"]]
        needs = table["needs"][fields["needs"]] if "needs" in fields else ""
        sets[key] = NamedSet(key=key, citation=citation, **(fields | {"needs": needs}))
    return sets


NAMED_SETS: dict[str, NamedSet] = _registry(DATA_DIR / "sets.toml")


def named_set(key: str) -> NamedSet:
    """The set called ``key``; ``KeyError`` naming the known ones."""
    try:
        return NAMED_SETS[key]
    except KeyError:
        raise KeyError(f"no named set {key!r}; choose one of {', '.join(NAMED_SETS)}") from None


def set_of_source(source: str) -> NamedSet | None:
    """The named set a ``source`` (:attr:`NamedSet.source_text`) names, or None."""
    if not source.startswith(SOURCE_PREFIX):
        return None
    return NAMED_SETS.get(source[len(SOURCE_PREFIX) :].split(" ", 1)[0])


def folder_of(named: NamedSet, data_dir: Path | None = None) -> Path:
    return (data_dir or DATA_DIR) / named.folder


def read_named_set(key: str, data_dir: Path | None = None) -> SetContents:
    """A named set's queries (and documents), its faults noted; the 3,750 labelled queries by the
    query-table reader every import uses (:func:`genderbias.files.queryfiles.read_query_table`)."""
    named = named_set(key)
    folder = folder_of(named, data_dir)
    if key == "grep-biasir":
        return read_grep_biasir(folder)
    if key in ("cpjku-msmarco", "cpjku-trecdl"):
        return read_cpjku(folder / named.files[0])
    rows, _ = read_query_table(folder / named.files[0])
    return SetContents([NamedQuery(qid, text, (), label) for qid, text, label in rows])


class Dataset(NamedTuple):
    """A named set as frames, as crowd-kit's ``load_dataset`` gives its sets: ``queries`` (``qid, text, categories,
    label``; categories ``;``-joined, label ``""`` where none), ``documents`` (Grep-BiasIR's ``docid, qid, relevant,
    title, text, wording``; else empty), ``qrels`` (``qid, docid, relevance``) and ``notes`` (what was repaired)."""

    queries: pd.DataFrame
    documents: pd.DataFrame
    qrels: pd.DataFrame
    notes: list[str]


def load(name: str, data_dir: Path | None = None) -> Dataset:
    """The bundled set ``name`` (:data:`NAMED_SETS`) as frames; ``data_dir``: another copy of the sets' folder."""
    import pandas as pd  # start-up: pooling's models import this module as Django starts

    contents = read_named_set(name, data_dir)
    queries = pd.DataFrame(
        [(q.qid, q.text, ";".join(q.categories), q.label) for q in contents.queries],
        columns=["qid", "text", "categories", "label"],
    )
    documents = pd.DataFrame(
        [(d.docid, d.qid, d.relevant, d.title, d.text, d.wording) for d in contents.documents],
        columns=["docid", "qid", "relevant", "title", "text", "wording"],
    )
    qrels = documents[["qid", "docid", "relevant"]].rename(columns={"relevant": "relevance"})
    return Dataset(queries, documents, qrels, list(contents.notes))


def bundled_file(key: str, data_dir: Path | None = None) -> Path:
    """The first file a set's import reads (its queries)."""
    named = named_set(key)
    return folder_of(named, data_dir) / named.files[0]


def wording_variants(documents: list[Document] | None = None) -> dict[str, tuple[str, str, str]]:
    """docid -> ``(qid, item, wording)`` of every Grep-BiasIR document (default: the bundled set's), for variant
    preference; a document without a wording (``both``) has ``""``, so its case is incomplete, not missing."""
    documents = read_grep_biasir(folder_of(NAMED_SETS["grep-biasir"])).documents if documents is None else documents
    return {d.docid: (d.qid, d.item, d.wording) for d in documents}

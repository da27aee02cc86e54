"""The field's own data sets by name: what each is, where it came from, and its readers.

Four sets are known by name (:data:`NAMED_SETS`), their files bundled with the product under
``pooling/data/named_sets/`` with their licences (``NOTICE`` there says where each came from):

- ``grep-biasir``: Grep-BiasIR (Krieg et al., CHIIR 2023, CC0): 117 bias-sensitive queries in 7
  categories, each with one relevant and one non-relevant document in male, female and neutral
  wording (702 documents) and their relevance judgments;
- ``cpjku-msmarco`` and ``cpjku-trecdl``: the 215 MS MARCO dev and 30 TREC DL 2019 bias-sensitive
  queries with their categories (Rekabsaz, Kopeinik & Schedl, SIGIR 2021; MIT);
- ``rekabsaz-3750``: the 3,750 MS MARCO dev queries with the study's gender labels (Rekabsaz &
  Schedl, SIGIR 2020; MIT).

The readers repair the sets' known faults and report each with file and line
(:class:`Notes`), rather than stopping: Grep-BiasIR's ``content_gender`` ``both`` (a document
naming both genders, no F/M/N wording) and its typo ``botrh``; CPJKU's category typos
(``Social Inequaltiy``, ``career``, ``Violence and exploitation``), empty categories and the comma
inside a Domains cell (``Health (status, access)``: one domain, not two). A file that is not the
set at all (a header missing a column) is an :class:`~genderbias.errors.InputError`.

Texts that cannot be shipped (MS MARCO passages: Microsoft's terms) are not here: a set says what
the user must bring (:attr:`NamedSet.needs`). Pure (standard library only).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from genderbias.errors import InputError

from .queryfiles import normalise_text

#: Where the bundled sets are (each folder with its licence file; ``NOTICE`` names the sources).
DATA_DIR = Path(__file__).resolve().parent / "data" / "named_sets"

#: The three wordings of a Grep-BiasIR document, as the data set writes them, and as the
#: project's variant preference names them (``genderbias.ranking.defaults.VARIANT_VERSIONS``: m, f, n).
WORDINGS = {"F": "f", "M": "m", "N": "n"}


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

_KRIEG = """@inproceedings{krieg2023grep,
  author    = {Klara Krieg and Emilia Parada-Cabaleiro and Gertraud Medicus and Oleg Lesota and Markus Schedl and Navid Rekabsaz},
  title     = {Grep-BiasIR: A Dataset for Investigating Gender Representation Bias in Information Retrieval Results},
  booktitle = {Proceedings of the 2023 Conference on Human Information Interaction and Retrieval (CHIIR '23)},
  publisher = {Association for Computing Machinery},
  address   = {New York, NY, USA},
  year      = {2023},
  doi       = {10.1145/3576840.3578295}
}"""
_REKABSAZ2021 = """@inproceedings{rekabsaz2021,
  author    = {Navid Rekabsaz and Simone Kopeinik and Markus Schedl},
  title     = {Societal Biases in Retrieved Contents: Measurement Framework and Adversarial Mitigation of {BERT} Rankers},
  booktitle = {Proceedings of the 44th International ACM SIGIR Conference on Research and Development in Information Retrieval},
  pages     = {306--316},
  publisher = {Association for Computing Machinery},
  address   = {New York, NY, USA},
  year      = {2021},
  doi       = {10.1145/3404835.3462949}
}"""
_REKABSAZ2020 = """@inproceedings{rekabsaz2020,
  author    = {Navid Rekabsaz and Markus Schedl},
  title     = {Do Neural Ranking Models Intensify Gender Bias?},
  booktitle = {Proceedings of the 43rd International ACM SIGIR Conference on Research and Development in Information Retrieval},
  pages     = {2065--2068},
  publisher = {Association for Computing Machinery},
  address   = {New York, NY, USA},
  year      = {2020},
  doi       = {10.1145/3397271.3401280}
}"""
_MSMARCO_NEEDS = (
    "the MS MARCO passage collection (collection.tsv, 8,841,823 passages), which Microsoft's terms do not "
    "let the product ship: give your copy with --collection PATH (the page: a path on the server), or register "
    "it once with `manage.py import_collection` or `manage.py import_dataset msmarco-passage`; its runs are "
    "imported against that collection"
)

NAMED_SETS: dict[str, NamedSet] = {
    s.key: s
    for s in (
        NamedSet(
            key="grep-biasir",
            title="Grep-BiasIR: 117 bias-sensitive queries, 702 documents in male, female and neutral wording",
            short="Grep-BiasIR",
            folder="grep-biasir",
            files=("queries.csv", "queries-documents_<Category>.csv"),
            source="KlaraKrieg/GrepBiasIR@ed44a46",
            url="https://github.com/KlaraKrieg/GrepBiasIR",
            licence="CC0-1.0",
            citation_key="krieg2023grep",
            citation=_KRIEG,
            has=("queries", "categories", "documents", "wordings", "qrels"),
            queries=117,
        ),
        NamedSet(
            key="cpjku-msmarco",
            title="The 215 bias-sensitive MS MARCO dev queries with their categories",
            short="the bias-sensitive MS MARCO dev queries of Rekabsaz, Kopeinik and Schedl",
            folder="cpjku-fair",
            files=("msmarco_passage.dev.fair.FULL_ANNOTATION.tsv",),
            source="CPJKU/FairnessRetrievalResults@81693da",
            url="https://github.com/CPJKU/FairnessRetrievalResults",
            licence="MIT",
            citation_key="rekabsaz2021",
            citation=_REKABSAZ2021,
            has=("queries", "categories"),
            needs=_MSMARCO_NEEDS,
            queries=215,
        ),
        NamedSet(
            key="cpjku-trecdl",
            # 30 in both of the repository's files (the reference README and issue 52 say 29).
            title="The 30 bias-sensitive TREC DL 2019 passage queries with their categories",
            short="the bias-sensitive TREC DL 2019 queries of Rekabsaz, Kopeinik and Schedl",
            folder="cpjku-fair",
            files=("trecdeep19_passage.fair.FULL_ANNOTATION.tsv",),
            source="CPJKU/FairnessRetrievalResults@81693da",
            url="https://github.com/CPJKU/FairnessRetrievalResults",
            licence="MIT",
            citation_key="rekabsaz2021",
            citation=_REKABSAZ2021,
            has=("queries", "categories"),
            needs=_MSMARCO_NEEDS,
            queries=30,
        ),
        NamedSet(
            key="rekabsaz-3750",
            title="3,750 MS MARCO dev queries with the study's gender labels",
            short="the gender-annotated MS MARCO dev queries of Rekabsaz and Schedl",
            folder="rekabsaz-3750",
            files=("queries_gender_annotated.csv",),
            source="navid-rekabsaz/GenderBias_IR",
            url="https://github.com/navid-rekabsaz/GenderBias_IR",
            licence="MIT",
            citation_key="rekabsaz2020",
            citation=_REKABSAZ2020,
            has=("queries", "labels"),
            needs=_MSMARCO_NEEDS,
            queries=3750,
        ),
    )
}


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


@dataclass
class Notes:
    """What a reader repaired or set aside, each ``file:line: what it found; what it did``."""

    items: list[str] = field(default_factory=list)

    def add(self, path: Path, line: int | None, text: str) -> None:
        self.items.append(str(InputError(path.name, line, text)))

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[str]:
        return iter(self.items)


@dataclass(frozen=True)
class NamedQuery:
    qid: str
    text: str
    categories: tuple[str, ...] = ()
    label: str = ""  #: the study's gender label (``n``, ``f``, ``m``, ``o``), when the set has one


@dataclass(frozen=True)
class Document:
    """A Grep-BiasIR document: ``wording`` is ``m``, ``f`` or ``n``, or ``""`` when the set gives none."""

    docid: str
    qid: str
    relevant: int
    title: str
    text: str
    wording: str

    @property
    def item(self) -> str:
        """The case its three wordings make: the query's relevant (``<qid>-relevant``) or
        non-relevant (``<qid>-non-relevant``) document."""
        return f"{self.qid}-{'relevant' if self.relevant else 'non-relevant'}"

    @property
    def passage(self) -> str:
        """The text a ranker reads: title and body, one line (``title body``)."""
        return normalise_text(f"{self.title} {self.text}").strip()


@dataclass
class SetContents:
    queries: list[NamedQuery]
    documents: list[Document] = field(default_factory=list)
    notes: Notes = field(default_factory=Notes)


def _csv_records(path: Path, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    """``(first line, row)`` of a CSV with a header (quoted fields may hold commas and line breaks)."""
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        missing = [name for name in required if name not in (reader.fieldnames or [])]
        if missing:
            raise InputError(path, 1, f"not the set's header: no column {', '.join(missing)}")
        line = reader.line_num + 1
        for row in reader:
            yield line, row
            line = reader.line_num + 1


# --- Grep-BiasIR -----------------------------------------------------------------------------

_GREP_QUERY_COLUMNS = ("q_id", "category", "query")
_GREP_DOC_COLUMNS = ("q_id", "d_id", "relevant", "query", "doc_title", "document", "content_gender")
#: The known typo of ``both`` in ``content_gender`` (queries-documents_Sex & Relationship.csv).
_GENDER_TYPOS = {"botrh": "both"}


def read_grep_biasir(folder: Path | None = None) -> SetContents:
    """Grep-BiasIR's queries (with their category) and documents (with relevance and wording).

    ``content_gender`` F/M/N is the wording; ``both`` (the document names both genders) is no
    wording: the document is kept, with ``wording`` empty, and noted (its case lacks a wording,
    so variant preference counts it incomplete); ``botrh`` is read as ``both`` and noted. A
    document of a query ``queries.csv`` lacks, a repeated ``d_id`` or a relevance other than 0
    or 1 is noted and left out.
    """
    folder = folder or folder_of(NAMED_SETS["grep-biasir"])
    notes = Notes()
    queries: list[NamedQuery] = []
    texts: dict[str, str] = {}
    path = folder / "queries.csv"
    for line, row in _csv_records(path, _GREP_QUERY_COLUMNS):
        qid, text = row["q_id"].strip(), normalise_text(row["query"]).strip()
        if not qid or not text or qid in texts:
            why = "no query id" if not qid else ("no query text" if not text else f"query id {qid} again")
            notes.add(path, line, f"{why}; line left out")
            continue
        texts[qid] = text
        category = row["category"].strip()
        queries.append(NamedQuery(qid, text, (category,) if category else ()))
    documents: list[Document] = []
    seen: set[str] = set()
    for path in sorted(folder.glob("queries-documents_*.csv")):
        for line, row in _csv_records(path, _GREP_DOC_COLUMNS):
            qid, docid = row["q_id"].strip(), row["d_id"].strip()
            gender = row["content_gender"].strip()
            if qid not in texts:
                notes.add(path, line, f"query {qid!r} is not in queries.csv; document {docid} left out")
                continue
            if not docid or docid in seen:
                notes.add(path, line, f"document id {docid!r} {'again' if docid else 'missing'}; line left out")
                continue
            if row["relevant"].strip() not in ("0", "1"):
                notes.add(path, line, f"relevance {row['relevant']!r} is not 0 or 1; document {docid} left out")
                continue
            if normalise_text(row["query"]).strip() != texts[qid]:
                notes.add(path, line, f"query text differs from queries.csv's for query {qid}; queries.csv's kept")
            typo = _GENDER_TYPOS.get(gender)
            read = f"content_gender {gender!r} (a typo, read as {typo!r})" if typo else f"content_gender {gender!r}"
            gender = typo or gender
            wording = WORDINGS.get(gender, "")
            if not wording:
                notes.add(
                    path,
                    line,
                    f"{read} is not F, M or N: document {docid} has no wording "
                    "(kept, with its judgment; variant preference counts its case incomplete)",
                )
            seen.add(docid)
            documents.append(Document(docid, qid, int(row["relevant"]), row["doc_title"], row["document"], wording))
    return SetContents(queries, documents, notes)


# --- CPJKU's bias-sensitive queries ----------------------------------------------------------

_CPJKU_COLUMNS = ("QID", "Query", "Categories", "Domains")
#: The categories of the CPJKU annotation: the five of the dataset's README table (after UN Women's
#: review) and Violence and Exploitation, which its data uses (11 queries) but its README's table omits.
CPJKU_CATEGORIES = ("Career", "Education", "Social Inequality", "Health", "Politics", "Violence and Exploitation")
#: Known misspellings, lower-cased, and what they stand for.
_CATEGORY_TYPOS = {"social inequaltiy": "Social Inequality"}


def split_outside_parentheses(cell: str) -> list[str]:
    """A cell's comma-separated values, a comma inside parentheses kept (``Health (status, access)``)."""
    parts, depth, current = [], 0, []
    for char in cell:
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        depth += (char == "(") - (char == ")")
        current.append(char)
    parts.append("".join(current))
    return [part.strip() for part in parts if part.strip()]


def _category(value: str) -> tuple[str, str]:
    """The canonical category of ``value`` and what was repaired (``""``: nothing), or ``("", why)``."""
    canonical = {c.lower(): c for c in CPJKU_CATEGORIES}
    key = value.lower()
    if value in CPJKU_CATEGORIES:
        return value, ""
    if key in canonical:
        return canonical[key], f"category {value!r} read as {canonical[key]!r} (capitalisation)"
    if key in _CATEGORY_TYPOS:
        return _CATEGORY_TYPOS[key], f"category {value!r} read as {_CATEGORY_TYPOS[key]!r} (a typo)"
    return "", f"unknown category {value!r} left out (known: {', '.join(CPJKU_CATEGORIES)})"


def read_cpjku(path: Path) -> SetContents:
    """CPJKU's annotated bias-sensitive queries (``QID, Query, Categories, Domains, …`` TSV).

    Categories are comma-separated; each is matched to :data:`CPJKU_CATEGORIES` (typos and
    capitalisation repaired and noted; an unknown one noted and left out); a query without a
    category is kept with none, and noted. A Domains cell's comma inside parentheses is one
    domain's, not a separator (noted where it occurs).
    """
    notes = Notes()
    queries: list[NamedQuery] = []
    seen: set[str] = set()
    with path.open(encoding="utf-8-sig", newline="") as handle:
        header: list[str] | None = None
        for line, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            cells = raw.rstrip("\r\n").split("\t")
            if header is None:
                header = [cell.strip() for cell in cells]
                missing = [name for name in _CPJKU_COLUMNS if name not in header]
                if missing:
                    raise InputError(path, line, f"not the set's header: no column {', '.join(missing)}")
                continue
            row = dict(zip(header, cells, strict=False))
            qid, text = row.get("QID", "").strip(), normalise_text(row.get("Query", "")).strip()
            if not qid or not text or qid in seen:
                why = "no query id" if not qid else ("no query text" if not text else f"query id {qid} again")
                notes.add(path, line, f"{why}; line left out")
                continue
            seen.add(qid)
            categories: list[str] = []
            for value in split_outside_parentheses(row.get("Categories", "")):
                category, repaired = _category(value)
                if repaired:
                    notes.add(path, line, repaired)
                if category and category not in categories:
                    categories.append(category)
            if not categories:
                notes.add(path, line, f"query {qid} has no category; kept without one")
            domains = row.get("Domains", "")
            if re.search(r"\([^)]*,[^)]*\)", domains):
                notes.add(path, line, f"Domains {domains.strip()!r}: the comma inside parentheses is one domain's")
            queries.append(NamedQuery(qid, text, tuple(categories)))
    if header is None:
        raise InputError(path, None, "empty file")
    return SetContents(queries, notes=notes)


def read_named_set(key: str, data_dir: Path | None = None) -> SetContents:
    """A named set's queries (and documents), its faults noted; the 3,750 labelled queries are
    read by the query-table reader the imports use (:func:`pooling.queryfiles.read_query_table`),
    so here only their file is named (:func:`bundled_file`)."""
    named = named_set(key)
    folder = folder_of(named, data_dir)
    if key == "grep-biasir":
        return read_grep_biasir(folder)
    if key in ("cpjku-msmarco", "cpjku-trecdl"):
        return read_cpjku(folder / named.files[0])
    raise KeyError(f"{key!r}: its queries are read with pooling.queryfiles.read_query_table")


def bundled_file(key: str, data_dir: Path | None = None) -> Path:
    """The first file a set's import reads (its queries)."""
    named = named_set(key)
    return folder_of(named, data_dir) / named.files[0]


def wording_variants(documents: list[Document] | None = None) -> dict[str, tuple[str, str, str]]:
    """docid -> ``(qid, item, wording)`` of every Grep-BiasIR document (default: the bundled set's):
    what variant preference reads for a run over its documents (their docids are the set's own
    ``d_id``). A document the set gives no wording (``both``) has wording ``""``: its case is then
    incomplete, not missing."""
    documents = read_grep_biasir().documents if documents is None else documents
    return {d.docid: (d.qid, d.item, d.wording) for d in documents}

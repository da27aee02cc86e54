"""The readers of the field's data sets (:mod:`genderbias.datasets`): Grep-BiasIR's queries and documents,
CPJKU's bias-sensitive queries, each set's known faults repaired and noted with file and line (:class:`Notes`)."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from genderbias.errors import InputError
from genderbias.files.queryfiles import normalise_text

__all__ = ["Document", "NamedQuery", "SetContents", "read_cpjku", "read_grep_biasir"]

#: The three wordings of a Grep-BiasIR document, as the data set writes them, and as the
#: project's variant preference names them (``genderbias.ranking.defaults.VARIANT_VERSIONS``: m, f, n).
WORDINGS = {"F": "f", "M": "m", "N": "n"}


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


def read_grep_biasir(folder: Path) -> SetContents:
    """Grep-BiasIR's queries (with their category) and documents (with relevance and wording: ``content_gender``
    F/M/N). A ``both`` (or ``botrh``) document is kept without a wording, so variant preference counts its case
    incomplete; a document of an unknown query, a repeated ``d_id`` or a relevance not 0/1 is left out; all noted.
    """
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
    """CPJKU's annotated bias-sensitive queries (``QID, Query, Categories, Domains, …`` TSV), categories matched to
    :data:`CPJKU_CATEGORIES`; each known fault repaired or set aside and noted (docs/metrics.md, "The field's data
    sets by name")."""
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

"""``.zenodo.json``: the deposit metadata of a dataset folder and of a paper bundle (Zenodo's "Deposit metadata",
developers.zenodo.org). Pure (no Django). The dataset and the paper point at each other once the other's DOI or
address is known, and both at the method they follow; the authors, which the platform cannot know, are a
placeholder that :func:`check_metadata` refuses before any upload.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

#: What the platform cannot know: the authors (the card's BibTeX and CITATION.cff say the same).
AUTHORS_TO_FILL = "The dataset's authors (to fill in)"

#: What every deposit of the platform is about.
KEYWORDS = ["gender bias", "information retrieval", "query annotation"]
#: Zenodo's upload types (deposition metadata ``upload_type``).
UPLOAD_TYPES = {
    "publication",
    "poster",
    "presentation",
    "dataset",
    "image",
    "video",
    "software",
    "lesson",
    "physicalobject",
    "other",
}
#: How a DOI is written: bare (``10.5281/zenodo.1234``), ``doi:`` before it, or a doi.org address.
_DOI_FORMS = re.compile(r"(?:https?://(?:dx\.)?doi\.org/|doi:)?(10\..*)", re.IGNORECASE | re.DOTALL)
#: A DOI as Crossref recommends matching one ("10.", a registrant code of 4-9 digits, "/", a suffix of letters,
#: digits and ``-._;()/:``): nothing that quotes, escapes or spaces, since LaTeX and BibTeX files are written beside.
DOI = re.compile(r"10\.\d{4,9}/[-._;()/:A-Za-z0-9]+")
#: An http(s) address of the characters RFC 3986 allows (percent-encode any other).
_URL = re.compile(r"https?://[A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=%-]+")


def parse_doi(text: str) -> str | None:
    """The DOI ``text`` writes (bare, ``doi:``, or a doi.org address), ``None`` when it is not written as one;
    ValueError when it is written as one but is not a DOI (:data:`DOI`). The one reader of a typed DOI."""
    text = text.strip()
    written = _DOI_FORMS.fullmatch(text)
    if written is None:
        return None
    if not DOI.fullmatch(written.group(1)):
        raise ValueError(
            f"not a DOI: {text!r} (a DOI is 10.NNNN/suffix, the suffix of letters, digits and -._;()/: only)"
        )
    return written.group(1)


def related(identifier: str, relation: str, resource_type: str) -> dict[str, str]:
    """One related identifier: a DOI (:func:`parse_doi`) or else an http(s) address (:data:`_URL`); ValueError
    for anything else."""
    identifier = identifier.strip()
    doi = parse_doi(identifier)
    if doi is not None:
        return {"identifier": doi, "relation": relation, "scheme": "doi", "resource_type": resource_type}
    if not _URL.fullmatch(identifier):
        raise ValueError(
            f"not a DOI or an http(s) address: {identifier!r} (an address of RFC 3986's characters only: "
            "percent-encode any other)"
        )
    return {"identifier": identifier, "relation": relation, "scheme": "url", "resource_type": resource_type}


def zenodo_metadata(
    *,
    upload_type: str,
    title: str,
    description: str,
    published: str,
    method_doi: str,
    license_id: str | None = None,
    version: str = "1.0.0",
    paper: str | None = None,
    dataset: str | None = None,
    creators: Sequence[str] = (),
    notes: str = "",
    publication_type: str | None = None,
) -> dict[str, Any]:
    """The deposit's ``.zenodo.json``: ``paper`` and ``dataset`` are the DOI or address of the
    paper and of the dataset this deposit goes with (the one not being deposited); ``method_doi`` the
    method the labels follow (referenced). ``creators``: "Family, Given" names (default: the placeholder)."""
    if upload_type not in UPLOAD_TYPES:
        raise ValueError(f"not a Zenodo upload type: {upload_type!r}")
    identifiers = [related(method_doi, "references", "publication-conferencepaper")]
    if paper and upload_type != "publication":
        identifiers.append(related(paper, "isSupplementTo", "publication-article"))
    if dataset and upload_type != "dataset":
        identifiers.append(related(dataset, "isSupplementedBy", "dataset"))
    data: dict[str, Any] = {
        "upload_type": upload_type,
        **({"publication_type": publication_type} if publication_type else {}),
        "title": title,
        "description": description,
        "creators": [{"name": name} for name in creators] or [{"name": AUTHORS_TO_FILL}],
        "publication_date": published,
        "version": version,
        "keywords": list(KEYWORDS),
        "related_identifiers": identifiers,
        "access_right": "open",
    }
    if license_id:
        data["license"] = license_id
    if notes:
        data["notes"] = notes
    return data


def check_metadata(metadata: Mapping[str, Any], where: str) -> None:
    """A ValueError naming ``where`` and the field when Zenodo would refuse the metadata, or when
    what only the researcher knows is still the placeholder (the creators)."""
    for key in ("upload_type", "title", "description", "creators", "publication_date"):
        if not metadata.get(key):
            raise ValueError(f"{where}: the field {key!r} is missing or empty")
    if metadata["upload_type"] not in UPLOAD_TYPES:
        raise ValueError(f"{where}: upload_type {metadata['upload_type']!r} is not one of Zenodo's")
    creators = metadata["creators"]
    if not isinstance(creators, list) or not all(isinstance(c, dict) and c.get("name") for c in creators):
        raise ValueError(f'{where}: creators must be a list of {{"name": "Family, Given"}}')
    if any(c["name"] == AUTHORS_TO_FILL for c in creators):
        raise ValueError(
            f'{where}: fill in the creators ("name": "Family, Given", optionally "affiliation" and "orcid") '
            "before depositing: the platform cannot know the authors"
        )

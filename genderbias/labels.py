"""The one vocabulary of gender labels (code, name, category slug, the text workers see), from which every place
that names a label takes it. The categories and examples follow Rekabsaz & Schedl, SIGIR 2020, Table 2. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ACCEPTED_SPELLINGS", "ALL_CATEGORIES", "CATEGORY_SLUGS", "EXPORT_CATEGORIES", "LABELS", "LABEL_CHOICES",
    "LABEL_NAMES", "NON_GENDERED", "VOCABULARY", "label_code",
]  # fmt: skip


@dataclass(frozen=True)
class Label:
    code: str  #: stored in the database and in exports (n, f, m, o)
    name: str  #: shown on pages and in the dataset card
    slug: str  #: used in URLs and on the command line (--category)
    key: str  #: keyboard shortcut on the HIT page
    definition: str  #: what workers read
    examples: tuple[str, ...]


VOCABULARY: tuple[Label, ...] = (
    Label(
        "n",
        "Non-gendered",
        "non-gendered",
        "1",
        "The query does not refer to any gender: it could be about anyone, or about no person at all.",
        ("what is a synapse", "how long to boil an egg", "symptoms of the flu"),
    ),
    Label(
        "f",
        "Female",
        "female",
        "2",
        "The query is about women or girls, or about something that concerns only females.",
        ("how long is a pregnancy", "who was the first queen of england", "what is a midwife"),
    ),
    Label(
        "m",
        "Male",
        "male",
        "3",
        "The query is about men or boys, or about something that concerns only males.",
        ("what age do men go bald", "who was the first king of france", "what does a prostate do"),
    ),
    Label(
        "o",
        "Other or multiple genders",
        "other",
        "4",
        "The query refers to more than one gender, or to a gender other than female or male.",
        ("do boys or girls learn faster", "what does non-binary mean", "average height of men and women"),
    ),
)

#: Label codes in their canonical order.
LABELS: tuple[str, ...] = tuple(label.code for label in VOCABULARY)
#: Code -> name shown to people.
LABEL_NAMES: dict[str, str] = {label.code: label.name for label in VOCABULARY}
#: Category slug -> code (``--category non-gendered``).
CATEGORY_SLUGS: dict[str, str] = {label.slug: label.code for label in VOCABULARY}
#: Django model choices.
LABEL_CHOICES: list[tuple[str, str]] = [(label.code, label.name) for label in VOCABULARY]
NON_GENDERED = "n"
#: What an export may hold: one category (by slug), or every labelled query.
ALL_CATEGORIES = "all"
EXPORT_CATEGORIES: tuple[str, ...] = (*CATEGORY_SLUGS, ALL_CATEGORIES)


#: Other spellings of the labels found in labelled files (the study's and common ones), lower-cased.
SPELLINGS: dict[str, str] = {
    "neutral": "n",
    "nongendered": "n",
    "non_gendered": "n",
    "women": "f",
    "woman": "f",
    "men": "m",
    "man": "m",
    "multiple": "o",
    "both": "o",
}
#: What a file's label column may hold, as the errors list it.
ACCEPTED_SPELLINGS = "n, f, m, o, a category (non-gendered, female, male, other) or its name (e.g. Non-gendered)"


def label_code(text: str) -> str | None:
    """A label given as a code (``n``), a category slug (``non-gendered``), its name
    (``Other or multiple genders``) or another known spelling (``neutral``: :data:`SPELLINGS`),
    as its code; else None."""
    value = text.strip().strip('"').lower()
    value = CATEGORY_SLUGS.get(value, value)
    value = _NAMES.get(value, value)
    value = SPELLINGS.get(value, value)
    return value if value in LABELS else None


_NAMES: dict[str, str] = {label.name.lower(): label.code for label in VOCABULARY}

"""The one definition of the gender labels: code, name, and the slug used in commands and URLs.

Pure Python, imported by models (choices), aggregation, exports and pages alike, so a
label is spelled the same everywhere.
"""

from __future__ import annotations

LABELS: tuple[str, ...] = ("n", "f", "m", "o")
LABEL_NAMES: dict[str, str] = {
    "n": "Non-gendered",
    "f": "Female",
    "m": "Male",
    "o": "Other or multiple genders",
}
CATEGORY_SLUGS: dict[str, str] = {"non-gendered": "n", "female": "f", "male": "m", "other": "o"}
LABEL_CHOICES: list[tuple[str, str]] = [(label, LABEL_NAMES[label]) for label in LABELS]

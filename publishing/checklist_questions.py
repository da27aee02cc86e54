"""The venues' checklist questions, quoted word for word from :data:`SOURCES` (ACL's Responsible NLP
Research checklist, sections B to E; the NeurIPS paper checklist, items 14 to 16): data in
``checklist_questions.toml`` beside this module, kept apart from the answers (:mod:`publishing.checklists`) so a new
edition changes that file alone."""

import tomllib
from pathlib import Path

#: What the researcher writes before submitting, in place of an answer the records cannot give.
TO_ANSWER = "[to be answered by the authors]"

_VENUES = tomllib.loads(Path(__file__).with_suffix(".toml").read_text(encoding="utf-8"))
#: Where each question's wording is quoted from.
SOURCES = {venue: quoted["source"] for venue, quoted in _VENUES.items()}
#: How a page names each source (the full reference is in :data:`SOURCES`).
SHORT_SOURCES = {venue: quoted["short"] for venue, quoted in _VENUES.items()}
#: The questions, word for word (``SOURCES``): (venue, key, question).
QUESTIONS: tuple[tuple[str, str, str], ...] = tuple(
    (venue, key, question) for venue, quoted in _VENUES.items() for key, question in quoted["questions"].items()
)

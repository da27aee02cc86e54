"""Gender word lists: which words count as female and which as male. A word list is a plain ``word,f|m`` file (one
entry per line, ``#`` comments allowed); the built-in ones are in ``data/``: RaB/ARaB's 32 + 32 definitional words
of Rekabsaz & Schedl (SIGIR 2020), and the others' 163 + 163 representative words and names.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from genderbias.errors import InputError
from genderbias.files.textfiles import open_text

__all__ = [
    "DEFAULT_FEMALE", "DEFAULT_MALE", "REPRESENTATIVE_WORDLIST", "GenderWords", "default_representative_wordlist",
    "default_wordlist", "load_wordlist", "wordlist_from_mapping",
]  # fmt: skip

FEMALE = "f"
MALE = "m"

#: The built-in word lists (``data/NOTICE``: source, licence).
DATA = Path(__file__).resolve().parent / "data"


def _listed(gender: str) -> list[str]:
    """The definitional words of ``gender`` in the file's order (synthetic data draws from them by position)."""
    with open_text(DATA / "wordlist_gender_definitional.txt") as lines:
        rows = (line.partition(",") for line in lines if line and not line.startswith("#"))
        return [word for word, _, listed in rows if listed == gender]


DEFAULT_FEMALE = _listed(FEMALE)
DEFAULT_MALE = _listed(MALE)


@dataclass(frozen=True)
class GenderWords:
    """Two disjoint sets of lower-case words; ``name`` says where they came from."""

    female: frozenset[str]
    male: frozenset[str]
    name: str = "custom"
    words: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        both = self.female & self.male
        if both:
            raise ValueError(f"word list {self.name!r}: words listed as both f and m: {', '.join(sorted(both))}")
        mapping = {w: FEMALE for w in self.female} | {w: MALE for w in self.male}
        object.__setattr__(self, "words", dict(sorted(mapping.items())))

    @property
    def sha256(self) -> str:
        """Content hash, independent of file layout: identifies cached magnitudes."""
        text = "\n".join(f"{w},{g}" for w, g in self.words.items())
        return hashlib.sha256(text.encode()).hexdigest()

    def __len__(self) -> int:
        return len(self.words)


def default_wordlist() -> GenderWords:
    """The 32 + 32 gender-definitional words of the SIGIR 2020 study."""
    return GenderWords(frozenset(DEFAULT_FEMALE), frozenset(DEFAULT_MALE), name="genderspecific-32+32")


#: The 163 + 163 gender-representative words and names of NFaiRR and TExFAIR (``data/NOTICE``: source, licence).
REPRESENTATIVE_WORDLIST = DATA / "wordlist_gender_representative.txt"


def default_representative_wordlist() -> GenderWords:
    """The 163 + 163 gender-representative words and names of Rekabsaz, Kopeinik & Schedl (SIGIR 2021)."""
    return load_wordlist(REPRESENTATIVE_WORDLIST, name="representative-163+163")


def wordlist_from_mapping(words: dict[str, str], name: str) -> GenderWords:
    """Rebuild a word list stored as ``{word: 'f' | 'm'}``."""
    return GenderWords(
        frozenset(w for w, g in words.items() if g == FEMALE),
        frozenset(w for w, g in words.items() if g == MALE),
        name=name,
    )


def load_wordlist(path: str | Path, name: str | None = None) -> GenderWords:
    """Read a ``word,f|m`` file. Words are lower-cased; a repeated word must keep its gender."""
    path = Path(path)
    words: dict[str, str] = {}
    with open_text(path) as lines:
        for number, raw in enumerate(lines, start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            word, sep, gender = line.rpartition(",")
            word, gender = word.strip().lower(), gender.strip().lower()
            if not sep or not word:
                raise InputError(path, number, f"expected 'word,f' or 'word,m', got {line!r}")
            if gender not in (FEMALE, MALE):
                raise InputError(path, number, f"gender must be 'f' or 'm', got {gender!r}")
            if words.get(word, gender) != gender:
                raise InputError(path, number, f"{word!r} is listed as both f and m")
            words[word] = gender
    if not words:
        raise InputError(path, None, "the word list is empty")
    return wordlist_from_mapping(words, name or path.name)

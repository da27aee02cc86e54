"""Tokenizers, defined once here; the fast engine in ``magnitudes`` uses the same definitions.

- ``whitespace``: ``text.lower().split(" ")`` exactly as the SIGIR 2020 reference code (``"he,"`` is not ``he``;
  empty strings between double spaces are tokens and count in a document's length).
- ``words`` (default): lower-cased maximal runs of word characters, the Unicode categories in
  :data:`WORD_CATEGORIES` (letters, marks, numbers, ``_``).

Invariant: :func:`word_character` is the one definition of a word character, ``\\UXXXXXXXX`` escapes that
Python's ``re`` and polars' Rust engine read identically; ``\\w`` is used nowhere, as the engines disagree on
marks, which belong to their letter (decomposed ``"café"`` is one word).
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

__all__ = ["DEFAULT_TOKENIZER", "TOKENIZERS", "non_word_character", "tokenize", "tokenizer_key", "word_character"]

TOKENIZERS = ("words", "whitespace")
DEFAULT_TOKENIZER = "words"
#: Unicode general categories of word characters (letters, marks, numbers, connector punctuation).
WORD_CATEGORIES = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc"})


@cache
def word_character() -> str:
    """The regex class ``[...]`` of every code point in :data:`WORD_CATEGORIES` (Python's Unicode
    database), as ranges of ``\\UXXXXXXXX`` escapes; both engines compile it to the same set."""
    codes = range(0x110000)
    inside = [unicodedata.category(chr(cp)) in WORD_CATEGORIES and not 0xD800 <= cp <= 0xDFFF for cp in codes]
    ranges, start = [], None
    for cp, member in enumerate([*inside, False]):
        if member and start is None:
            start = cp
        elif not member and start is not None:
            ranges.append(rf"\U{start:08X}" if start == cp - 1 else rf"\U{start:08X}-\U{cp - 1:08X}")
            start = None
    return "[" + "".join(ranges) + "]"


def non_word_character() -> str:
    """The complement of :func:`word_character`: ``[^...]``."""
    return "[^" + word_character()[1:]


@cache
def _word_run() -> re.Pattern[str]:
    return re.compile(word_character() + "+")


def tokenizer_key(tokenizer: str) -> str:
    """What ``tokenizer``'s tokens depend on, for keys of data derived from them (the counts cache): ``words`` also
    names the Unicode version of :func:`word_character`, so counts of another Python's database are not reused."""
    if tokenizer == "whitespace":
        return tokenizer
    if tokenizer == "words":
        return f"words-unicode{unicodedata.unidata_version}"
    raise ValueError(f"unknown tokenizer {tokenizer!r}; choose one of {', '.join(TOKENIZERS)}")


def tokenize(text: str, tokenizer: str = DEFAULT_TOKENIZER) -> list[str]:
    """The tokens of ``text`` under ``tokenizer``."""
    if tokenizer == "whitespace":
        return text.lower().split(" ")
    if tokenizer == "words":
        return _word_run().findall(text.lower())
    raise ValueError(f"unknown tokenizer {tokenizer!r}; choose one of {', '.join(TOKENIZERS)}")

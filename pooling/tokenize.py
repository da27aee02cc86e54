"""Tokenizers, defined once in plain Python; the fast engine in ``magnitudes`` must agree.

- ``whitespace``: ``text.lower().split(" ")`` exactly as the SIGIR 2020 reference code,
  so ``"he,"`` and ``"She."`` are not the words ``he`` and ``she``, and empty strings
  between double spaces count as tokens (they affect document length).
- ``words`` (the default): lower-cased runs of ``\\w`` characters, which also counts
  ``"he,"`` and ``"She."``.
"""

from __future__ import annotations

import re

TOKENIZERS = ("words", "whitespace")
DEFAULT_TOKENIZER = "words"
_WORD = re.compile(r"\w+")


def tokenize(text: str, tokenizer: str = DEFAULT_TOKENIZER) -> list[str]:
    """The tokens of ``text`` under ``tokenizer``."""
    if tokenizer == "whitespace":
        return text.lower().split(" ")
    if tokenizer == "words":
        return _WORD.findall(text.lower())
    raise ValueError(f"unknown tokenizer {tokenizer!r}; choose one of {', '.join(TOKENIZERS)}")

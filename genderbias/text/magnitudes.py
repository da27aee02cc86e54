"""Gender counts and magnitudes of documents: per document its female-word tokens, male-word tokens and all
tokens (TExFAIR's length), streamed once through the collection in polars blocks at flat memory.

The SIGIR 2020 magnitudes of a count: ``tc`` the count; ``tf`` ``ln(1 + count)`` (as ``log(1 + x)``, not
``log1p``, to equal the reference code's to the last bit); ``bool`` 1 if any word of the group occurs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np
import polars as pl

from genderbias.files.blocks import iter_blocks
from genderbias.files.collection import parse_passages, read_passage_texts
from genderbias.text import MAGNITUDES
from genderbias.text.tokenize import TOKENIZERS, non_word_character, word_character
from genderbias.text.wordlists import GenderWords

__all__ = [
    "COUNT_SCHEMA", "count_frame", "document_counts", "document_counts_at", "document_counts_at_each", "magnitude",
    "magnitudes_frame",
]  # fmt: skip

COUNT_SCHEMA = {"docid": pl.String, "f": pl.Int64, "m": pl.Int64, "length": pl.Int64}


def _alternation(words: Iterable[str]) -> str:
    # Longest first so that no word shadows a longer one sharing its prefix.
    return "|".join(re.escape(w) for w in sorted(words, key=lambda w: (-len(w), w)))


def count_expressions(wordlist: GenderWords, tokenizer: str, lengths: bool = True) -> list[pl.Expr]:
    """Polars expressions giving ``f``, ``m``, ``length`` over the columns :func:`count_frame` adds: ``whitespace``
    counts the `` word `` occurrences of the space-padded text (one Aho-Corasick pass, overlaps included);
    ``words`` counts `` (?:w1|w2…) `` in :func:`separated_words` (the Rust regex engine has no look-around).
    """
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"unknown tokenizer {tokenizer!r}; choose one of {', '.join(TOKENIZERS)}")
    text = pl.col("text")
    if tokenizer == "whitespace":

        def count(words: frozenset[str]) -> pl.Expr:
            patterns = _whitespace_patterns(words)
            if not patterns:
                return pl.lit(0, dtype=pl.Int64)
            return pl.col("matches").list.eval(pl.element().is_in(patterns)).list.sum().cast(pl.Int64)

        length = (text.str.count_matches(" ") + 1).cast(pl.Int64)  # a regex: faster here than literal=True
    else:
        separated = pl.col("separated")

        def count(words: frozenset[str]) -> pl.Expr:
            if not words:
                return pl.lit(0, dtype=pl.Int64)
            return separated.str.count_matches(f" (?:{_alternation(words)}) ").cast(pl.Int64)

        length = text.str.count_matches(word_character() + "+").cast(pl.Int64)
    if not lengths:
        length = _NO_LENGTH
    return [count(wordlist.female).alias("f"), count(wordlist.male).alias("m"), length.alias("length")]


#: ``length`` when it is not counted (:func:`count_frame` with ``lengths=False``).
_NO_LENGTH = pl.lit(None, dtype=pl.Int64)


def _whitespace_patterns(words: frozenset[str]) -> list[str]:
    """`` word `` for each word that can be a whitespace token (one with a space never is)."""
    return sorted(f" {word} " for word in words if word and " " not in word)


def whitespace_matches(text: pl.Expr, wordlist: GenderWords) -> pl.Expr:
    """Every `` word `` of the word list in `` text ``, overlapping occurrences included."""
    patterns = _whitespace_patterns(wordlist.female | wordlist.male)
    padded = pl.lit(" ") + text + pl.lit(" ")
    if not patterns:
        return pl.lit([], dtype=pl.List(pl.String))
    return padded.str.extract_many(patterns, overlapping=True)


def separated_words(text: pl.Expr) -> pl.Expr:
    """``text`` with every run of non-word characters (:func:`genderbias.text.tokenize.non_word_character`,
    the one definition both engines use) replaced by two spaces, and padded by one on each side:
    every ``words`` token then sits between its own two spaces."""
    return pl.lit(" ") + text.str.replace_all(non_word_character() + "+", "  ") + pl.lit(" ")


#: A ``words`` token that can occur in ASCII text: every ASCII word character, nothing else.
_ASCII_TOKEN = re.compile(r"[0-9A-Za-z_]+")


def ascii_word_counts(wordlist: GenderWords, lengths: bool = True) -> list[pl.Expr]:
    """``f``, ``m``, ``length`` under the ``words`` tokenizer over a lower-cased all-ASCII ``text``: of ASCII,
    exactly ``[0-9A-Za-z_]`` are word characters, which is what the ASCII boundary ``(?-u:\\b)`` means, so no
    costly separated copy of the text is needed."""
    text = pl.col("text")

    def count(words: frozenset[str]) -> pl.Expr:
        tokens = [word for word in words if _ASCII_TOKEN.fullmatch(word)]
        if not tokens:
            return pl.lit(0, dtype=pl.Int64)
        return text.str.count_matches(rf"(?-u:\b)(?:{_alternation(tokens)})(?-u:\b)").cast(pl.Int64)

    length = text.str.count_matches(_ASCII_TOKEN.pattern).cast(pl.Int64) if lengths else _NO_LENGTH
    return [count(wordlist.female).alias("f"), count(wordlist.male).alias("m"), length.alias("length")]


def count_frame(passages: pl.DataFrame, wordlist: GenderWords, tokenizer: str, lengths: bool = True) -> pl.DataFrame:
    """Counts for a frame ``docid, text`` (texts as in the collection), in its order; ``lengths=False`` leaves
    ``length`` null (a pool needs only ``f`` and ``m``)."""
    lowered = passages.select("docid", pl.col("text").str.to_lowercase())
    if tokenizer == "whitespace":
        lowered = lowered.with_columns(whitespace_matches(pl.col("text"), wordlist).alias("matches"))
        return lowered.select("docid", *count_expressions(wordlist, tokenizer, lengths))
    if tokenizer != "words":
        raise ValueError(f"unknown tokenizer {tokenizer!r}; choose one of {', '.join(TOKENIZERS)}")
    # All-ASCII texts (most of MS MARCO) take the fast path; the rest the general one.
    rows = lowered.with_row_index("row")
    is_ascii = pl.col("text").str.len_bytes() == pl.col("text").str.len_chars()
    fast = rows.filter(is_ascii).select("row", "docid", *ascii_word_counts(wordlist, lengths))
    general = rows.filter(~is_ascii).with_columns(separated_words(pl.col("text")).alias("separated"))
    general = general.select("row", "docid", *count_expressions(wordlist, tokenizer, lengths))
    return pl.concat([fast, general]).sort("row").drop("row")


def document_counts(
    collection_path: str | Path,
    docids: Iterable[str] | pl.Series | None,
    wordlist: GenderWords,
    tokenizer: str,
    progress: Callable[[int], None] | None = None,
    byte_range: tuple[int, int] | None = None,
    lengths: bool = True,
) -> pl.DataFrame:
    """Counts ``docid, f, m, length`` for the requested documents (``None``: every one) in one streaming pass.
    ``progress``: (compressed) bytes read; ``byte_range`` (:func:`genderbias.files.blocks.byte_ranges`): one chunk,
    for workers splitting the scan; ``lengths``: :func:`count_frame`.
    """
    path = Path(collection_path)
    wanted = None
    if docids is not None:
        wanted = pl.Series("docid", docids, dtype=pl.String).unique()
        if not len(wanted):
            return pl.DataFrame(schema=COUNT_SCHEMA)

    # One block at a time: memory stays flat in the size of the collection.
    parts = []
    for lines, position in iter_blocks(path, byte_range=byte_range):
        counted = count_frame(parse_passages(path, lines, wanted=wanted), wordlist, tokenizer, lengths)
        if len(counted):
            parts.append(counted)
        if progress:
            progress(position)
    if not parts:
        return pl.DataFrame(schema=COUNT_SCHEMA)
    return pl.concat(parts)


def document_counts_at(
    collection_path: str | Path,
    spans: pl.DataFrame,
    wordlist: GenderWords,
    tokenizer: str,
    progress: Callable[[int], None] | None = None,
    batch: int = 40_000,
    lengths: bool = True,
) -> pl.DataFrame:
    """Counts ``docid, f, m, length`` for the passages at ``spans`` (``docid, start, length``, from the collection's
    docid index), in file order, equal to :func:`document_counts` for them without parsing the rest of the file:
    ``batch`` passages at a time, batches on every core (:func:`parallel_map`). ``lengths``: :func:`count_frame`.
    """
    return document_counts_at_each(collection_path, spans, wordlist, [tokenizer], progress, batch, lengths)[tokenizer]


def document_counts_at_each(
    collection_path: str | Path,
    spans: pl.DataFrame,
    wordlist: GenderWords,
    tokenizers: Iterable[str],
    progress: Callable[[int], None] | None = None,
    batch: int = 40_000,
    lengths: bool = True,
) -> dict[str, pl.DataFrame]:
    """:func:`document_counts_at` under each of ``tokenizers`` (tokenizer → counts), every
    passage read once for all of them."""
    tokenizers = list(dict.fromkeys(tokenizers))
    spans = spans.sort("start")
    parts = [spans.slice(offset, batch) for offset in range(0, len(spans), batch)]

    def count(part: pl.DataFrame) -> list[pl.DataFrame]:
        texts = read_passage_texts(collection_path, part)
        return [count_frame(texts, wordlist, tokenizer, lengths) for tokenizer in tokenizers]

    counted: list[list[pl.DataFrame]] = []
    for part, counts in zip(parts, parallel_map(count, parts), strict=True):
        counted.append(counts)
        if progress:
            progress(int(part["start"][-1] + part["length"][-1]))
    return {
        tokenizer: pl.concat([counts[i] for counts in counted]) if counted else pl.DataFrame(schema=COUNT_SCHEMA)
        for i, tokenizer in enumerate(tokenizers)
    }


def parallel_map(function: Callable, items: list) -> Iterator:
    """``map(function, items)`` on a thread per core, results in order as ready: for work spending its time in
    polars (which lets go of the GIL), sharing the process's memory."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    workers = min(len(items), len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())
    if workers <= 1:
        yield from map(function, items)
        return
    with ThreadPoolExecutor(workers) as pool:
        yield from pool.map(function, items)


def magnitude(counts: np.ndarray | pl.Series | pl.Expr, variant: str):
    """Gender magnitude of counts: ``tc`` (count), ``tf`` (ln(1 + count)) or ``bool`` (count > 0)."""
    if variant not in MAGNITUDES:
        raise ValueError(f"unknown magnitude {variant!r}; choose one of {', '.join(MAGNITUDES)}")
    if isinstance(counts, pl.Expr | pl.Series):
        if variant == "tc":
            return counts.cast(pl.Float64)
        if variant == "tf":
            return (counts.cast(pl.Float64) + 1.0).log()
        return (counts > 0).cast(pl.Float64)
    counts = np.asarray(counts, dtype=np.float64)
    if variant == "tc":
        return counts
    if variant == "tf":
        return np.log(1.0 + counts)
    return (counts > 0).astype(np.float64)


def magnitudes_frame(counts: pl.DataFrame, variant: str) -> pl.DataFrame:
    """Counts ``docid, f, m, ...`` as magnitudes ``docid, f, m`` of one variant: the one
    counts -> magnitudes step, used by pooling and by every metric."""
    return counts.select(
        "docid", magnitude(pl.col("f"), variant).alias("f"), magnitude(pl.col("m"), variant).alias("m")
    )

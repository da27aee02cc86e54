"""Tokenizers, word lists and magnitudes: the fast engine agrees with the plain definitions."""

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from genderbias.errors import InputError
from genderbias.text.magnitudes import count_frame, document_counts, magnitude
from genderbias.text.tokenize import tokenize
from genderbias.text.wordlists import GenderWords, default_wordlist, load_wordlist

WORDS = GenderWords(frozenset({"she", "her", "woman"}), frozenset({"he", "his", "man"}), name="tiny")

TRICKY = [
    "He said she was his sister.",
    "he,  she. HE He  her",
    "She's the man; woman-man he\the",
    "",
    "   ",
    "Ünïcode HE ünïcode she ΣΑΣ her",
    "hehe shepherd manhood his's",
]


def reference_counts(text: str, tokenizer: str) -> tuple[int, int, int]:
    tokens = tokenize(text, tokenizer)
    return sum(t in WORDS.female for t in tokens), sum(t in WORDS.male for t in tokens), len(tokens)


def test_whitespace_tokenizer_is_the_reference_split():
    assert tokenize("He said  she.", "whitespace") == ["he", "said", "", "she."]


def test_words_tokenizer_counts_punctuated_words():
    assert tokenize("He said, she. Her's", "words") == ["he", "said", "she", "her", "s"]


@pytest.mark.parametrize("tokenizer", ["whitespace", "words"])
def test_engine_equals_plain_python_on_tricky_text(tokenizer):
    frame = pl.DataFrame({"docid": [str(i) for i in range(len(TRICKY))], "text": TRICKY})
    got = count_frame(frame, WORDS, tokenizer).select("f", "m", "length").rows()
    assert got == [reference_counts(text, tokenizer) for text in TRICKY]


def test_whitespace_counts_by_hand():
    # "he,  she. HE He  her" -> ["he,", "", "she.", "he", "he", "", "her"]: f = her, m = he he.
    frame = pl.DataFrame({"docid": ["d"], "text": ["he,  she. HE He  her"]})
    assert count_frame(frame, WORDS, "whitespace").row(0) == ("d", 1, 2, 7)
    # words: he she he he her -> f = 2, m = 3, 5 tokens.
    assert count_frame(frame, WORDS, "words").row(0) == ("d", 2, 3, 5)


def test_unknown_tokenizer():
    with pytest.raises(ValueError, match="unknown tokenizer"):
        tokenize("x", "bpe")


def test_magnitude_variants_by_hand():
    counts = np.array([0, 1, 3])
    assert magnitude(counts, "tc").tolist() == [0.0, 1.0, 3.0]
    assert magnitude(counts, "tf").tolist() == [0.0, math.log(2), math.log(4)]
    assert magnitude(counts, "bool").tolist() == [0.0, 1.0, 1.0]
    with pytest.raises(ValueError):
        magnitude(counts, "idf")


def test_document_counts_streams_only_requested_docs(tmp_path):
    path = tmp_path / "c.tsv"
    path.write_text("1\tShe and her mother\n2\tHe and his man\n3\tnothing here\n4\the she\n")
    counts = document_counts(path, ["2", "4", "404"], WORDS, "words").sort("docid")
    assert counts.rows() == [("2", 0, 3, 4), ("4", 1, 1, 2)]  # he, his, man / she, he
    assert len(document_counts(path, None, WORDS, "words")) == 4


def test_default_wordlist_is_32_plus_32():
    words = default_wordlist()
    assert len(words.female) == 32 and len(words.male) == 32
    assert {"she", "her", "mother"} <= words.female and {"he", "his", "father"} <= words.male


def test_reference_wordlist_loads_and_equals_the_default(reference_dir):
    words = load_wordlist(reference_dir / "wordlist_genderspecific.txt")
    assert len(words.female) == 32 and len(words.male) == 32
    assert words.words == default_wordlist().words


def test_wordlist_errors_name_the_line(tmp_path):
    path = tmp_path / "w.txt"
    path.write_text("she,f\nhe,x\n")
    with pytest.raises(InputError, match=r"w\.txt:2: gender must be 'f' or 'm'"):
        load_wordlist(path)
    path.write_text("she,f\nshe,m\n")
    with pytest.raises(InputError, match=r"w\.txt:2: 'she' is listed as both f and m"):
        load_wordlist(path)


# --- one definition of the `words` tokenizer in both engines, over fuzzed Unicode text ---------

FUZZ_WORDS = GenderWords(
    frozenset({"she", "her", "i\u0307", "café", "ünïcode"}), frozenset({"he", "his", "σας", "e\u0301"}), name="fuzz"
)
_PIECES = [
    "he",
    "She",
    "HIS",
    "İ",  # lower-cases to i + U+0307 COMBINING DOT ABOVE
    "cafe\u0301",  # decomposed é
    "e\u0301",
    "\u0301",
    "ΣΑΣ",
    "_",
    "\u200d",  # zero width joiner
    "‿",  # connector punctuation other than "_"
    "²",
    " ",
    "  ",
    "\t",
    ",",
    "-",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=3)), max_size=12).map("".join),
        min_size=1,
        max_size=20,
    )
)
@pytest.mark.slow
@pytest.mark.parametrize("tokenizer", ["words", "whitespace"])
def test_engine_equals_the_definition_on_fuzzed_unicode(tokenizer, texts):
    # Texts without newlines or NULs (the collection format has one passage per line).
    texts = [t.replace("\n", " ").replace("\r", " ").replace("\x00", " ") for t in texts]
    frame = pl.DataFrame({"docid": [str(i) for i in range(len(texts))], "text": texts})
    got = count_frame(frame, FUZZ_WORDS, tokenizer).select("f", "m", "length").rows()
    expected = []
    for text in texts:
        tokens = tokenize(text, tokenizer)
        expected.append(
            (sum(t in FUZZ_WORDS.female for t in tokens), sum(t in FUZZ_WORDS.male for t in tokens), len(tokens))
        )
    assert got == expected


def test_combining_marks_belong_to_their_word():
    assert tokenize("İstanbul café") == ["i\u0307stanbul", "café"]
    assert tokenize("cafe\u0301 he") == ["cafe\u0301", "he"]
    frame = pl.DataFrame({"docid": ["d"], "text": ["İ HE"]})
    assert count_frame(frame, FUZZ_WORDS, "words").row(0) == ("d", 1, 1, 2)


# --- the ASCII fast path of `words` equals the definition -------------------------------------

ASCII_WORDS = GenderWords(
    frozenset({"she", "her", "hers", "wo_man", "mother-in-law", "Her", "x2"}),
    frozenset({"he", "his", "man", "a b", "_"}),
    name="ascii",
)
_ASCII_PIECES = [
    "he",
    "She",
    "HERS",
    "her",
    "wo_man",
    "Mother-in-law",
    "man",
    "x2",
    "2x",
    "_",
    " ",
    "  ",
    "\t",
    ",",
    "-",
    "'",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.lists(
            st.one_of(st.sampled_from(_ASCII_PIECES), st.text(alphabet=st.characters(max_codepoint=126), max_size=3)),
            max_size=12,
        ).map("".join),
        min_size=1,
        max_size=20,
    )
)
def test_ascii_fast_path_of_words_equals_the_definition(texts):
    """All-ASCII texts skip the separated copy (``ascii_word_counts``); mixed in with others,
    each row still gets the definition's counts, in the frame's order."""
    texts = [t.replace("\n", " ").replace("\r", " ").replace("\x00", " ") for t in texts] + ["é he"]
    frame = pl.DataFrame({"docid": [str(i) for i in range(len(texts))], "text": texts})
    got = count_frame(frame, ASCII_WORDS, "words").select("docid", "f", "m", "length").rows()
    expected = []
    for i, text in enumerate(texts):
        tokens = tokenize(text, "words")
        female = sum(t in ASCII_WORDS.female for t in tokens)
        expected.append((str(i), female, sum(t in ASCII_WORDS.male for t in tokens), len(tokens)))
    assert got == expected

"""Agreement with the reference computations on the reference word lists (skipped without them)."""

import math
from collections import Counter

import polars as pl
import pytest

from genderbias.ranking import nfairr
from genderbias.text.magnitudes import count_frame, magnitude
from genderbias.text.wordlists import load_wordlist
from metrics.services import REPRESENTATIVE_WORDLIST

PASSAGES = {
    "p1": "She said her mother and her sister visited him.",
    "p2": "he  is the son of Mary and John , his father",
    "p3": "The HE-man and his Girls went home. she",
    "p4": "nothing gendered in this passage at all",
}


def reference_counts(words: dict[str, str]) -> dict[str, tuple[int, int]]:
    """The SIGIR 2020 notebooks: lower-case, split on single spaces, count list words per gender."""
    out = {}
    for pid, text in PASSAGES.items():
        tokens = Counter(text.lower().split(" "))
        out[pid] = (
            sum(c for t, c in tokens.items() if words.get(t) == "f"),
            sum(c for t, c in tokens.items() if words.get(t) == "m"),
        )
    return out


@pytest.mark.parametrize("name", ["wordlist_genderspecific.txt", "wordlist_gender_representative.txt"])
def test_whitespace_magnitudes_equal_the_reference_log(reference_dir, name):
    wordlist = load_wordlist(reference_dir / name)
    frame = pl.DataFrame({"docid": list(PASSAGES), "text": list(PASSAGES.values())})
    counts = count_frame(frame, wordlist, "whitespace").sort("docid")
    expected = reference_counts(wordlist.words)
    tf_f = magnitude(counts["f"].to_numpy(), "tf")
    tf_m = magnitude(counts["m"].to_numpy(), "tf")
    for i, pid in enumerate(counts["docid"]):
        f, m = expected[pid]
        assert tf_f[i] == math.log(1 + f)
        assert tf_m[i] == math.log(1 + m)
    # p1: she, her, mother, her, sister (f = 5) and "him." is not the token "him"
    assert expected["p1"] == (5, 0)


def test_the_built_in_representative_list_is_the_reference_one(reference_dir):
    assert (
        load_wordlist(REPRESENTATIVE_WORDLIST).words
        == load_wordlist(reference_dir / "wordlist_gender_representative.txt").words
    )


def test_nfairr_neutrality_matches_the_reference_formula(reference_dir):
    words = load_wordlist(reference_dir / "wordlist_gender_representative.txt").words
    for pid, (f, m) in reference_counts(words).items():
        total = f + m
        reference = 1.0 if total <= 1 else 1 - abs(f / total - 0.5) - abs(m / total - 0.5)
        assert nfairr.neutrality([f], [m], 1)[0] == pytest.approx(reference, abs=1e-12), pid

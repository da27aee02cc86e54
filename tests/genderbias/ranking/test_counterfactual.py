"""The counterfactual rewrite: swaps, case, the 'her' rule, names, byte-for-byte copying, gzip."""

import gzip

import pytest

from genderbias.ranking.counterfactual import PAIRS, Swapper, match_case, swap_table, write_counterfactual
from genderbias.text.wordlists import DEFAULT_FEMALE, DEFAULT_MALE

NAMES = [("mary", "f"), ("anna", "f"), ("john", "m"), ("bob", "m"), ("he", "m")]


@pytest.fixture
def swapper():
    return Swapper(swap_table(NAMES))


def test_pairs_swap_both_ways_and_keep_case(swapper):
    assert swapper.text("He told his son; she met him.") == "She told her daughter; he met her."
    assert swapper.text("HE and SHE, Man and WOMEN") == "SHE and HE, Woman and MEN"
    assert swapper.text("himself herself boys girls") == "herself himself girls boys"


def test_her_becomes_his_by_default_or_him_on_request(swapper):
    assert swapper.text("Her book; saw her") == "His book; saw his"
    assert Swapper(swap_table(her="him")).text("saw her") == "saw him"
    with pytest.raises(ValueError):
        swap_table(her="hers")


def test_only_whole_words_are_swapped(swapper):
    text = "The theme: shell, mentor, he's, manly, Hector"
    assert swapper.text(text) == "The theme: shell, mentor, she's, manly, Hector"


def test_names_pair_across_genders_alphabetically(swapper):
    # female names anna, mary ↔ male names bob, john (alphabetical); "he" stays a pronoun
    assert swapper.text("Anna met Mary, BOB met John") == "Bob met John, ANNA met Mary"


def test_definitional_words_all_have_a_counterpart():
    table = swap_table()
    for word in DEFAULT_FEMALE + DEFAULT_MALE:
        assert word in table, word
    assert all(table[male] == female for female, male in PAIRS)


def test_match_case():
    assert match_case("he", "she") == "she"
    assert match_case("He", "she") == "She"
    assert match_case("HE", "she") == "SHE"


def test_line_keeps_the_id_and_everything_else(swapper):
    assert swapper.line("he\tHe said  \t she\r\n") == "he\tShe said  \t he\r\n"
    assert swapper.line("no tab he\n") == "no tab he\n"


def test_streaming_rewrite_plain_and_gzip(tmp_path, swapper):
    source = tmp_path / "c.tsv"
    content = "1\tHe is a man.\n2\tnothing here  ,\r\n3\tMary's mother\n"
    source.write_bytes(content.encode())
    seen = []
    lines = write_counterfactual(source, tmp_path / "out.tsv", swapper, progress=seen.append)
    assert lines == 3
    assert (tmp_path / "out.tsv").read_bytes() == b"1\tShe is a woman.\n2\tnothing here  ,\r\n3\tJohn's father\n"
    assert seen[-1] == source.stat().st_size
    # gzip in, gzip out
    zipped = tmp_path / "c.tsv.gz"
    zipped.write_bytes(gzip.compress(content.encode()))
    write_counterfactual(zipped, tmp_path / "out.tsv.gz", swapper)
    assert gzip.decompress((tmp_path / "out.tsv.gz").read_bytes()) == (tmp_path / "out.tsv").read_bytes()
    assert not list(tmp_path.glob(".*.tmp"))


def test_failed_rewrite_leaves_nothing(tmp_path, swapper):
    source = tmp_path / "bad.tsv"
    source.write_bytes(b"1\tok\n2\t\xff\xfe\n")
    with pytest.raises(UnicodeDecodeError):
        write_counterfactual(source, tmp_path / "out.tsv", swapper)
    assert not (tmp_path / "out.tsv").exists()
    assert not list(tmp_path.glob(".*"))

"""Whole numbers typed by a person (issue 44.5): plain ASCII decimals within a stated range, one parser."""

import pytest

from core.numbers import NumberError, parse_count, parse_counts


@pytest.mark.parametrize("text", ["²", "①", "١٠", "１０", "+10", "-1", "1_0", "1e3", "10.0", "", " ", "0x10", "9" * 19])
def test_anything_but_ascii_digits_is_refused_naming_the_field(text):
    with pytest.raises(NumberError, match=r"^cutoff: .*not a whole number"):
        parse_count(text, "cutoff", maximum=10**18)


def test_ascii_digits_within_the_range():
    assert parse_count(" 010\t", "depth", minimum=1, maximum=100) == 10
    assert parse_count(7, "depth", maximum=7) == 7
    with pytest.raises(NumberError, match=r"^depth: must be at most 100 \(got 101\)$"):
        parse_count("101", "depth", maximum=100)
    with pytest.raises(NumberError, match=r"^depth: must be at least 1 \(got 0\)$"):
        parse_count("0", "depth", minimum=1, maximum=100)
    with pytest.raises(NumberError, match="not a whole number"):
        parse_count(True, "depth", maximum=100)
    with pytest.raises(NumberError, match="got float"):
        parse_count(1.0, "depth", maximum=100)


def test_a_list_is_sorted_distinct_and_bounded_in_length():
    assert parse_counts("20, 5,,10,5", "cutoffs", minimum=1, maximum=100, most=5) == (5, 10, 20)
    with pytest.raises(NumberError, match=r"^cutoffs: at most 3 values \(got 4\)$"):
        parse_counts("1,1,1,1", "cutoffs", maximum=100, most=3)  # repeats count: the text is the work
    with pytest.raises(NumberError, match="at least one value"):
        parse_counts(" , ", "cutoffs", maximum=100, most=3)
    with pytest.raises(NumberError, match=r"^cutoffs: '②' is not a whole number"):
        parse_counts("5,②", "cutoffs", maximum=100, most=3)

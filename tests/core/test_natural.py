"""core.natural: query ids in natural order, numbers by value."""

import random

from core.natural import natural_key, natural_sorted


def test_numbers_compare_by_value_and_text_alike():
    assert natural_sorted(["10", "2", "1", "100", "20"]) == ["1", "2", "10", "20", "100"]
    assert natural_sorted(["q10", "q2", "Q3", "q1"]) == ["q1", "q2", "Q3", "q10"]
    assert natural_sorted(["b2c10", "b2c9", "b10"]) == ["b2c9", "b2c10", "b10"]


def test_any_mix_has_one_total_order():
    values = ["10", "a", "2", "a10", "a2", "1a", "", "01", "1", "é", "-3"]
    shuffled = values[:]
    orders = set()
    for seed in range(20):
        random.Random(seed).shuffle(shuffled)
        orders.add(tuple(natural_sorted(shuffled)))
    assert len(orders) == 1  # no comparison of a number with text, no order depending on the input's
    assert natural_key("01") != natural_key("1")  # equal values, distinct ids: ties broken by the text

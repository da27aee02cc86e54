"""pooling.analysis: the analysis choices and the one set of checks pools and reports share."""

from types import SimpleNamespace

import pytest

from core.errors import ServiceError
from pooling.analysis import (
    DEFAULT_MAGNITUDE,
    DEFAULT_TOKENIZER,
    MAGNITUDES,
    TOKENIZERS,
    check_at_least_one,
    check_magnitude,
    check_same_collection,
    check_tokenizer,
)


def test_the_defaults_are_among_the_choices():
    assert DEFAULT_MAGNITUDE in MAGNITUDES == ("tc", "tf", "bool")
    assert DEFAULT_TOKENIZER in TOKENIZERS


def test_unknown_tokenizer_and_magnitude_are_refused_listing_the_choices():
    assert check_tokenizer(DEFAULT_TOKENIZER) == DEFAULT_TOKENIZER
    assert check_magnitude("bool") == "bool"
    with pytest.raises(ServiceError, match=f"unknown tokenizer 'bert'; choose one of {', '.join(TOKENIZERS)}"):
        check_tokenizer("bert")
    with pytest.raises(ServiceError, match="unknown magnitude 'log'; choose one of tc, tf, bool"):
        check_magnitude("log")


@pytest.mark.parametrize("value", [0, -3, 2.0, True, "10"])
def test_at_least_one_refuses_anything_but_a_positive_whole_number(value):
    with pytest.raises(ServiceError, match=f"pool depth must be a whole number of at least 1, got {value!r}"):
        check_at_least_one(value, "pool depth")


def test_runs_compared_together_must_rank_one_collection():
    a, b, other = (SimpleNamespace(name=n, collection_id=c) for n, c in (("a", 1), ("b", 1), ("c", 2)))
    check_same_collection([a, b], "a pool")
    with pytest.raises(ServiceError, match="all runs of a pool must rank the same collection"):
        check_same_collection([a, other], "a pool")
    with pytest.raises(ServiceError, match="give at least one run"):
        check_same_collection([], "a report")

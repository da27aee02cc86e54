"""``<key:...>`` URLs: any string goes into one path segment and comes back exactly."""

import pytest
from django.urls import resolve, reverse
from hypothesis import given
from hypothesis import strategies as st

from core.converters import KeyConverter, decode_key, encode_key


@given(st.text(min_size=1))
def test_every_key_round_trips_through_one_safe_segment(key):
    segment = encode_key(key)
    assert decode_key(segment) == key
    assert segment not in (".", "..") and "/" not in segment and "%" not in segment
    assert all(c.isascii() and (c.isalnum() or c in "-_.~") for c in segment)


@pytest.mark.parametrize(
    ("key", "segment"),
    [("104", "104"), ("q-1_b.2", "q-1_b.2"), ("a/b", "a~2Fb"), ("..", "~2E."), ("50%", "50~25"), ("é", "~C3~A9")],
)
def test_usual_ids_read_as_themselves_and_others_are_escaped(key, segment):
    assert encode_key(key) == segment


@pytest.mark.parametrize("segment", ["", "~", "~4", "~41", "a~2fb", "~FF", ".x", "a b", "a/b"])
def test_only_the_canonical_encoding_is_accepted(segment):
    with pytest.raises(ValueError):
        decode_key(segment)


def test_the_converter_is_registered_for_query_urls():
    url = reverse("annotation:batch-query", args=["b1", "a/../b?#"])
    assert url == "/annotation/batches/b1/queries/a~2F..~2Fb~3F~23/"
    assert resolve(url).kwargs == {"name": "b1", "qid": "a/../b?#"}
    assert KeyConverter().to_url("é q") == "~C3~A9~20q"

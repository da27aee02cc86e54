"""``preset="sigir2020"``: the reference code's computation (Rekabsaz & Schedl, SIGIR 2020): the
whitespace tokenizer ``text.lower().split(" ")`` and the run's own order of ties. Figures by hand
from ARaB's definition (tf magnitude ln(1 + count), m − f)."""

import math

import pytest

import genderbias

# "He, she said": the whitespace tokens are "he," "she" "said" (f 1, m 0); the words tokenizer's
# are he, she, said (f 1, m 1). "he said": m 1 under both. The two documents tie.
TEXTS = {"a": "He, she said", "b": "he said"}
RUN = {"q1": {"a": 1.0, "b": 1.0}}
LN2 = math.log(2)


def test_the_preset_computes_as_the_reference_code():
    figures = genderbias.calc_aggregate(["ARaB@2"], RUN, TEXTS, preset="sigir2020")
    (measure,) = figures
    assert str(measure) == "ARaB(tokenizer='whitespace',ties='file')@2"
    # file order a, b: magnitudes −ln 2, +ln 2; ARaB@2 = (−ln 2 + (−ln 2 + ln 2) / 2) / 2
    assert figures[measure] == pytest.approx(-LN2 / 2)
    # the defaults: a is 0 (he and she), b is ln 2, the expectation over both orders of the tie:
    # (a, b): (0 + ln 2 / 2) / 2; (b, a): (ln 2 + ln 2 / 2) / 2
    default = genderbias.calc_aggregate(["ARaB@2"], RUN, TEXTS)["ARaB@2"]
    assert default == pytest.approx((LN2 / 4 + 3 * LN2 / 4) / 2)


def test_the_preset_reaches_iter_calc_and_the_bound_measures():
    (metric,) = genderbias.iter_calc(["ARaB@2"], RUN, TEXTS, preset="sigir2020")
    assert metric.value == pytest.approx(-LN2 / 2)
    (bound,) = genderbias.measures_for(TEXTS, measures=["ARaB@2"], preset="sigir2020")
    assert str(bound) == "ARaB(tokenizer='whitespace',ties='file')@2"


def test_a_preset_the_library_cannot_honour_or_a_clash_is_refused():
    with pytest.raises(ValueError, match="unknown preset 'sigir2019'; choose one of sigir2020, sigir2021, ecir2024"):
        genderbias.calc_aggregate(["ARaB@2"], RUN, TEXTS, preset="sigir2019")
    with pytest.raises(ValueError, match=r"preset 'sigir2021' .* normalises NFaiRR by a background run"):
        genderbias.calc_aggregate(["NFaiRR@2"], RUN, TEXTS, preset="sigir2021")
    with pytest.raises(
        ValueError, match=r"ARaB@2: it gives tokenizer='words' and preset 'sigir2020' sets tokenizer='whitespace'"
    ):
        genderbias.calc_aggregate(["ARaB(tokenizer=words)@2"], RUN, TEXTS, preset="sigir2020")

"""Measures written as ir_measures writes its own: every string round-trips, defaults are not
written, and a bad parameter is refused with its name (the expected strings are written here)."""

import pytest

import genderbias
from genderbias.api.notation import MeasureError, parse_measure

WRITTEN = [
    "ARaB@10",
    "RaB(magnitude='bool')@5",
    "NFaiRR(threshold=2.0)@10",
    "TExFAIR@10",
    "TExFAIR(variant='plain')@20",
    "CRBO@10",
    "CRBO(p=0.8)@5",
    "AWRF(weights='trec',target=0.4)@10",
    "rKL(protected='male')@20",
    "rND@10",
    "rRD(step=5)@10",
    "ARaB(ties='trec_eval',tokenizer='whitespace')@5",
    "ARaB(bound='low')@10",
]


@pytest.mark.parametrize("text", WRITTEN)
def test_every_measure_string_round_trips(text):
    measure = parse_measure(text)
    assert str(measure) == text
    assert parse_measure(str(measure)) == measure


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("RaB(magnitude=bool)@5", "RaB(magnitude='bool')@5"),  # bare words, as the issue writes them
        ("NFaiRR(threshold=1)@10", "NFaiRR@10"),  # the default τ is not written
        ("ARaB(ties=tie-aware, magnitude=tf)@10", "ARaB@10"),
        ('ARaB(ties="file")@3', "ARaB(ties='file')@3"),
        (" ARaB @ 10 ", "ARaB@10"),
    ],
)
def test_other_spellings_read_as_the_measure(text, written):
    assert str(parse_measure(text)) == written


def test_the_objects_are_built_as_ir_measures_builds_its_own():
    assert str(genderbias.ARaB @ 10) == "ARaB@10"
    assert str(genderbias.RaB(magnitude="bool") @ 5) == "RaB(magnitude='bool')@5"
    assert genderbias.NFaiRR(threshold=1) @ 10 == parse_measure("NFaiRR@10")
    assert hash(genderbias.ARaB @ 10) == hash(parse_measure("ARaB@10"))
    # the defaults are the platform's: tie-aware, the words tokenizer, τ = 1, tf magnitudes
    arab = genderbias.ARaB @ 10
    assert (arab["ties"], arab["tokenizer"], arab["magnitude"]) == ("tie-aware", "words", "tf")
    assert (genderbias.NFaiRR @ 10)["threshold"] == 1.0


@pytest.mark.parametrize(
    ("text", "parameter", "words"),
    [
        ("NFaiRR(threshold=-1)@10", "threshold", "must not be negative"),
        ("RaB(magnitude=tc)@5", "magnitude", "choose one of tf, bool"),
        ("ARaB(ties=random)@5", "ties", "choose one of tie-aware, trec_eval, file"),
        ("ARaB@0", "cutoff", "must be at least 1 (got 0)"),
        ("ARaB@ten", "cutoff", "'ten' is not a whole number"),
        ("RaB@١٠", "cutoff", "'١٠' is not a whole number: use ASCII digits 0-9"),  # Arabic-Indic ten
        ("RaB@99999999999999999999", "cutoff", "must be at most 10000 (got a 20-digit number)"),
        ("TExFAIR(seed=1_0)@10", "seed", "'1_0' is not a whole number"),
        ("NFaiRR(threshold=١.٥)@10", "threshold", "'١.٥' is not a decimal number"),
        ("ARaB(threshold=2)@5", "threshold", "ARaB takes no parameter 'threshold'"),
        ("CRBO(p=1.5)@10", "p", "strictly between 0 and 1"),
        ("AWRF(target=1)@10", "target", "strictly between 0 and 1"),
    ],
)
def test_a_bad_parameter_is_refused_by_name(text, parameter, words):
    with pytest.raises(MeasureError) as refused:
        parse_measure(text)
    assert refused.value.parameter == parameter
    assert words in str(refused.value) and f"'{parameter}'" in str(refused.value) and text in str(refused.value)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("P@99999999999999999999", "must be at most 10000 (got a 20-digit number)"),  # issue 82's input
        ("nDCG@١٠", "'١٠' is not a whole number: use ASCII digits 0-9, like 10"),
        ("RR@0", "must be at least 1 (got 0)"),
        ("AP@10001", "must be at most 10000 (got 10001)"),
    ],
)
def test_an_effectiveness_measures_cutoff_is_read_as_every_cutoff(text, words):
    """ir_measures' own measures (P@k, nDCG@k …) take the bias measures' cutoff rule: refused when
    parsed, naming the measure and its cutoff (a 20-digit cutoff once reached ir_measures and failed
    the report's job with a KeyError)."""
    from genderbias.ranking.effectiveness import parse_measures

    with pytest.raises(MeasureError) as refused:
        parse_measures(f"RR@10,{text}")
    assert (refused.value.measure, refused.value.parameter) == (text, "cutoff")
    assert str(refused.value) == f"{text}: parameter 'cutoff': {words}"
    assert parse_measures("P@10000, nDCG@10") == ("P@10000", "nDCG@10")


def test_an_unknown_measure_or_a_missing_cutoff_is_refused():
    with pytest.raises(MeasureError, match="unknown measure 'nDCG'; choose one of RaB, ARaB"):
        parse_measure("nDCG@10")
    with pytest.raises(MeasureError, match=r"give a cutoff: ARaB@10"):
        genderbias.calc_aggregate(["ARaB"], {"q": {"d": 1.0}}, {"d": "she"})


def test_the_package_and_its_measures_load_no_numpy():
    """Forms and settings import light modules of the library: the package and the measure
    objects must not cost them numpy, pandas or polars (the computations load them)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import json, sys, genderbias; genderbias.parse_measure('ARaB@10'); genderbias.NFaiRR @ 5; "
        "print(json.dumps([m for m in ('numpy', 'pandas', 'polars') if m in sys.modules]))"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []

"""Whole numbers typed by a person (issue 44.5): plain ASCII decimals within a stated range, one parser."""

import pytest

from genderbias.numbers import NumberError, parse_count, parse_counts


@pytest.mark.parametrize("text", ["²", "①", "١٠", "１０", "+10", "-1", "1_0", "1e3", "10.0", "", " ", "0x10"])
def test_anything_but_ascii_digits_is_refused_naming_the_field(text):
    with pytest.raises(NumberError, match=r"^cutoff: .*not a whole number"):
        parse_count(text, "cutoff", maximum=10**18)


def test_digits_past_the_bound_are_refused_with_the_bound():
    """ASCII digits, but more of them than the bound has: the bound is said, not "not a whole number"."""
    with pytest.raises(NumberError, match=r"^cutoff: must be at most 1000000000000000000 \(got a 19-digit number\)$"):
        parse_count("9" * 19, "cutoff", maximum=10**18)


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


REFUSED_DECIMALS = [
    "١.٥",  # Arabic-Indic digits: float() reads 1.5
    "٣",
    "²",
    "①",
    "０.５",  # full-width digits
    "nan",
    "NaN",
    "inf",
    "-inf",
    "Infinity",
    "1_0.5",  # float() reads 10.5
    "1e1_0",
    "0x1",
    "",
    "1.2.3",
    ".",
    "e3",
    "1e",
    "++1",
    "+-1",
    "1 000",
    "0.5\n",
]


@pytest.mark.parametrize("text", REFUSED_DECIMALS)
def test_a_decimal_is_ascii_digits_a_point_and_an_exponent_only(text):
    from genderbias.numbers import parse_decimal

    with pytest.raises(NumberError, match=r"^risk: .*not a decimal number"):
        parse_decimal(text, "risk")


#: What people paste (issue 53): another tool's full float, a leading point, an exponent, a plus.
PASTED = ["0.055174522848548305", ".5", "1e-3", "+0.5", "5E-2", "1.", "-.25", "2.5e+1", " 0.1 ", "0." + "0" * 40 + "1"]


@pytest.mark.parametrize("text", PASTED)
def test_a_decimal_reads_what_people_paste(text):
    from decimal import Decimal

    from genderbias.numbers import parse_decimal

    # The expected value: the decimal module's reading of the same ASCII text, an independent reader.
    assert parse_decimal(text, "risk") == float(Decimal(text.strip()))


def test_a_decimal_out_of_the_floats_range_names_the_field():
    from genderbias.numbers import parse_decimal

    with pytest.raises(NumberError, match=r"^delta: .*too large"):
        parse_decimal("1e400", "delta")
    with pytest.raises(NumberError, match=r"^delta: must be at most 1"):
        parse_decimal("1e1", "delta", maximum=1)
    with pytest.raises(NumberError, match=r"^delta: .*at most 100 characters"):
        parse_decimal("0." + "1" * 200, "delta")


def test_a_decimal_within_its_range():
    from genderbias.numbers import parse_decimal

    assert parse_decimal(" 0.05 ", "risk", minimum=0, maximum=1) == 0.05
    assert parse_decimal("-2", "shift") == -2.0 and parse_decimal(0.5, "risk") == 0.5
    with pytest.raises(NumberError, match=r"^risk: must be at most 1 \(got 1.5\)$"):
        parse_decimal("1.5", "risk", minimum=0, maximum=1)
    with pytest.raises(NumberError, match="not a finite number"):
        parse_decimal(float("nan"), "risk")


def test_the_form_and_api_fields_read_through_the_one_parser():
    """``forms.IntegerField`` and DRF's took ``١٠`` as 10, ``FloatField`` ``1e3`` and ``nan``."""
    from django import forms

    from core.forms import CountField, DecimalNumberField
    from core.serializers import CountField as ApiCount
    from core.serializers import DecimalNumberField as ApiDecimal

    class Form(forms.Form):
        depth = CountField(min_value=1, max_value=100)
        risk = DecimalNumberField(min_value=0, max_value=1, required=False)

    assert Form({"depth": "10", "risk": "0.5"}).is_valid()
    bad = Form({"depth": "١٠", "risk": "nan"})
    assert not bad.is_valid()
    assert "is not a whole number" in bad.errors["depth"][0] and "not a decimal number" in bad.errors["risk"][0]
    assert not Form({"depth": "101"}).is_valid()  # the field's range still holds

    from rest_framework import serializers

    class Body(serializers.Serializer):
        depth = ApiCount(min_value=1, max_value=100)
        risk = ApiDecimal(min_value=0, max_value=1, required=False)

    assert Body(data={"depth": 10, "risk": 0.5}).is_valid()
    assert Body(data={"depth": "10", "risk": "0.5"}).is_valid()
    for body, field in (({"depth": "١٠"}, "depth"), ({"depth": 10.0}, "depth"), ({"depth": 5, "risk": "1_0"}, "risk")):
        checked = Body(data=body)
        assert not checked.is_valid() and field in checked.errors
    assert not Body(data={"depth": 101}).is_valid()


@pytest.mark.parametrize(
    ("option", "value"), [("--depth", "١٠"), ("--depth", "1_0"), ("--p", "nan"), ("--p", "1_0"), ("--p", "٠.٥")]
)
def test_a_commands_number_is_refused_by_its_option_before_any_work(option, value):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match=f"argument {option}: '{value}' is not a"):
        call_command("crbo", "--run", "a", "--counterfactual-run", "b", option, value)

"""One rule for writing a p-value (issue 45): ``< 0.0001`` below it, four decimals otherwise,
the same on a page, in the terminal table and in the paper bundle's LaTeX."""

import math

import pytest
from django.template import Context, Template

from core.figure_notes import p_value_text
from publishing.latex import p_value_tex


@pytest.mark.parametrize(
    ("p", "text"),
    [
        (4.2968197395090625e-306, "< 0.0001"),
        (7e-323, "< 0.0001"),
        (0.0, "< 0.0001"),
        (0.00009999, "< 0.0001"),
        (0.0001, "0.0001"),
        (0.012345, "0.0123"),
        (0.05, "0.0500"),
        (1.0, "1.0000"),
        (None, ""),
        (math.nan, ""),
    ],
)
def test_the_rule(p, text):
    assert p_value_text(p) == text


def test_a_page_the_terminal_and_latex_write_it_the_same_way():
    page = Template("{% load p_values %}p {{ p|p_value }}").render(Context({"p": 7e-323}))
    assert page == "p &lt; 0.0001"  # escaped for HTML, read as "p < 0.0001"
    assert p_value_tex(7e-323) == "$<$ 0.0001"
    assert p_value_tex(0.0123) == "0.0123"
    assert p_value_tex(None) == ""

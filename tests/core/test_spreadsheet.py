"""The one CSV writer for people: formulas neutralised, numbers kept, read back by the csv module."""

import csv
import io
from decimal import Decimal

import numpy as np
import pytest

from core.spreadsheet import csv_text, neutralise_formula, spreadsheet_cell


@pytest.mark.parametrize("cell", ["=1+1", "+31 6", "-ve blood", "@SUM(A1)", "\tx", "\rx", '=HYPERLINK("u","x")'])
def test_cells_a_spreadsheet_would_evaluate_get_an_apostrophe(cell):
    assert neutralise_formula(cell) == "'" + cell


@pytest.mark.parametrize("cell", ["who is she", "1", "", "a=b", "'quoted"])
def test_other_text_is_kept(cell):
    assert neutralise_formula(cell) == cell


def test_numbers_stay_numbers_and_missing_values_are_empty():
    assert spreadsheet_cell(-0.25) == "-0.25"
    assert spreadsheet_cell(np.float64(-1e-17)) == "-1e-17"
    assert spreadsheet_cell(np.int64(-3)) == -3
    assert spreadsheet_cell(Decimal("-1.50")) == "-1.50"
    assert spreadsheet_cell(float("nan")) == ""
    assert spreadsheet_cell(None) == ""
    assert spreadsheet_cell("-0.25") == "'-0.25"  # text that looks like a number is still text


def test_round_trip_through_the_csv_module():
    rows = [["1", '=cmd|"/c calc"!A1', -0.5], ["2", 'a, "quoted"\nline', 3]]
    text = csv_text(["qid", "query", "value"], rows)
    parsed = list(csv.reader(io.StringIO(text)))
    assert parsed == [["qid", "query", "value"], ["1", '\'=cmd|"/c calc"!A1', "-0.5"], ["2", 'a, "quoted"\nline', "3"]]


def test_report_csvs_go_through_the_writer():
    """The report's summary and per-query CSVs: run names and qids neutralised, values numeric."""
    import pandas as pd

    from metrics.formatting import results_csv
    from tests.support.per_query_text import per_query_csv

    summary = pd.DataFrame(
        [{"run": "=evil()", "metric": "RaB", "variant": "tf", "cutoff": 10, "value": -0.125, "queries": 3}]
    )
    assert results_csv(summary).splitlines()[1] == "'=evil(),RaB,tf,10,-0.125,3"
    per_query = pd.DataFrame(
        [{"run": "bm25", "qid": "+1", "metric": "RaB", "variant": "tf", "cutoff": 10, "value": -0.5}]
    )
    assert per_query_csv(per_query).splitlines()[1] == "bm25,'+1,RaB,tf,10,-0.5"

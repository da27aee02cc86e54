"""Once genderbias is imported, ir_measures knows its measures by name (issue 83, item 8): they join
ir_measures' registry as its own do, so ``ir_measures.parse_measure("ARaB@10")`` works, and one computed by
ir_measures without its texts says so by name (a ValueError, not a KeyError)."""

import json
import subprocess
import sys
from pathlib import Path

import ir_measures
import pandas as pd
import pytest

import genderbias

ROOT = Path(__file__).resolve().parents[3]
QRELS = pd.DataFrame({"query_id": ["1"], "doc_id": ["a"], "relevance": [1]})
RUN = pd.DataFrame({"query_id": ["1", "1"], "doc_id": ["a", "b"], "score": [2.0, 1.0]})


def test_ir_measures_parses_the_measures_once_genderbias_is_imported():
    script = (
        "import json, sys, ir_measures\n"
        "try:\n    ir_measures.parse_measure('ARaB@10'); before = 'known'\n"
        "except NameError as exc:\n    before = str(exc)\n"
        "import genderbias\n"
        "names = ['ARaB@10', 'RaB(magnitude=\"bool\")@5', 'NFaiRR@10', 'EE@10', 'GFR@10', 'CRBO(p=0.8)@5']\n"
        "print(json.dumps([before, [str(ir_measures.parse_measure(n)) for n in names],"
        " [m for m in ('numpy', 'pandas') if m in sys.modules]]))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    before, parsed, heavy = json.loads(out.stdout)
    assert before == "measure not found: ARaB"
    assert parsed == ["ARaB@10", "RaB(magnitude='bool')@5", "NFaiRR@10", "EE@10", "GFR@10", "CRBO(p=0.8)@5"]
    assert heavy == []  # importing genderbias still loads no numpy


def test_a_measure_parsed_by_ir_measures_is_the_librarys():
    assert ir_measures.parse_measure("ARaB@10") == genderbias.parse_measure("ARaB@10")
    assert ir_measures.parse_measure("ARaB(bound='low')@10") == genderbias.ARaB(bound="low") @ 10


@pytest.mark.parametrize("measure", ["ARaB@10", "EE@10", "GFR@5"])
def test_computed_by_ir_measures_without_texts_it_says_so_by_name(measure):
    with pytest.raises(ValueError, match=rf"^{measure} reads the documents' texts: bind it first"):
        ir_measures.calc_aggregate([ir_measures.parse_measure(measure), ir_measures.nDCG @ 10], QRELS, RUN)


def test_bound_to_texts_ir_measures_computes_it_beside_its_own():
    texts = {"a": "she and her sister", "b": "he and his brother"}
    bound = genderbias.measures_for(texts, measures=["GFR@2"], missing="error")
    figures = ir_measures.calc_aggregate([*bound, ir_measures.nDCG @ 10], QRELS, RUN)
    assert figures[ir_measures.nDCG @ 10] == 1.0
    assert figures[bound[0]] == pytest.approx(
        float(
            genderbias.calc_aggregate(["GFR@2"], RUN.rename(columns={"query_id": "qid", "doc_id": "docno"}), texts)[
                "GFR@2"
            ]
        )
    )

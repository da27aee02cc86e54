"""docs/library.md runs as written: every ```python block, in order, in one namespace, from a folder
that is not the checkout (the guide makes its data)."""

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "library.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


@pytest.mark.slow
def test_every_python_block_of_the_guide_runs(tmp_path):
    blocks = python_blocks(GUIDE.read_text(encoding="utf-8"))
    assert len(blocks) >= 4
    namespace: dict = {"__name__": "library_guide"}
    printed = io.StringIO()
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        for number, block in enumerate(blocks, 1):
            with contextlib.redirect_stdout(printed):
                exec(compile(block, f"{GUIDE.name} block {number}", "exec"), namespace)
    finally:
        os.chdir(here)
    table = namespace["table"]
    # the guide's table: two runs, nDCG beside ARaB with its range over the orders of ties
    assert list(table.index) == ["BM25", "BM25+"]
    assert (table["ARaB(bound='low')@10"] <= table["ARaB@10"]).all()
    assert (table["ARaB@10"] <= table["ARaB(bound='high')@10"]).all()
    assert table["nDCG@10"].between(0, 1).all() and table["NFaiRR@10"].between(0, 1).all()
    assert "BM25+" in printed.getvalue()
    assert "ARaB(tokenizer='whitespace',ties='file')@10" in printed.getvalue()  # the papers' preset


def test_the_guide_installs_what_it_imports():
    text = GUIDE.read_text(encoding="utf-8")
    install = " ".join(re.findall(r"^pip install (.*)$", text, flags=re.M))
    imported = set(re.findall(r"^(?:import|from) (\w+)", "\n".join(python_blocks(text)), flags=re.M))
    packages = {"rank_bm25": "rank-bm25", "pyterrier": "python-terrier"}  # import name → what pip installs
    for module in imported & set(packages):
        assert packages[module] in install, module
    assert imported <= {*packages, "genderbias", "ir_measures", "pandas"}  # ir_measures, pandas: the library's

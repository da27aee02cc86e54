"""docs/library.md runs as written: every ```python block, in order, in one namespace, from the checkout."""

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
def test_every_python_block_of_the_guide_runs():
    blocks = python_blocks(GUIDE.read_text(encoding="utf-8"))
    assert len(blocks) >= 4
    namespace: dict = {"__name__": "library_guide"}
    printed = io.StringIO()
    here = os.getcwd()
    os.chdir(ROOT)
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

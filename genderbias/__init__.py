"""genderbias: gender-bias measures of rankings (RaB, ARaB, NFaiRR, TExFAIR, AWRF, rKL, rND, rRD, EE, GFR, CRBO),
tie-aware, in the field's conventions (docs/library.md)::

    import genderbias
    genderbias.calc_aggregate(["ARaB@10", genderbias.NFaiRR @ 10], "run.trec", "collection.tsv")

The names below load on first use (module ``__getattr__``): forms and settings import light modules
such as :mod:`genderbias.ranking.defaults`, and importing the package must not load numpy.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from typing import Any

#: Public name → the module defining it (each module's names space-separated).
_PUBLIC = {
    name: module
    for module, names in {
        "genderbias.api.calc": "calc_aggregate iter_calc per_query measures_for Figure Metric",
        "genderbias.api.notation": "parse_measure MeasureError MEASURES "
        "RaB ARaB NFaiRR TExFAIR AWRF rKL rND rRD CRBO EE GFR",
        "genderbias.api.inputs": "load_run load_texts Texts MissingTextsError",
        "genderbias.text.wordlists": "GenderWords load_wordlist",
    }.items()
    for name in names.split()
}
__all__ = sorted(_PUBLIC)


class _JoinIrMeasures(importlib.abc.MetaPathFinder):
    """The measures join ir_measures' registry (``ir_measures.parse_measure("ARaB@10")``) as soon as both are
    imported, in either order: the platform imports the package at start-up, where loading ir_measures (and
    what it loads) would cost every process and command (tests/core/test_startup.py), so the registration
    waits for ir_measures' own import and follows it."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "ir_measures":
            return None
        sys.meta_path.remove(self)  # one registration; the spec below comes from the other finders
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            load(module)
            importlib.import_module("genderbias.api.notation")

        spec.loader.exec_module = exec_module
        return spec


if "ir_measures" in sys.modules:
    importlib.import_module("genderbias.api.notation")
elif not any(isinstance(finder, _JoinIrMeasures) for finder in sys.meta_path):
    sys.meta_path.insert(0, _JoinIrMeasures())


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'genderbias' has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})

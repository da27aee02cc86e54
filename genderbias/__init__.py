"""genderbias: gender-bias measures of rankings (RaB, ARaB, NFaiRR, TExFAIR, AWRF, rKL, rND, rRD, EE, GFR, CRBO),
tie-aware, in the field's conventions (docs/library.md)::

    import genderbias
    genderbias.calc_aggregate(["ARaB@10", genderbias.NFaiRR @ 10], "run.trec", "collection.tsv")

The names below load on first use (module ``__getattr__``): forms and settings import light modules
such as :mod:`genderbias.ranking.defaults`, and importing the package must not load numpy.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name → the module defining it.
_PUBLIC = {
    "calc_aggregate": "genderbias.api.calc",
    "iter_calc": "genderbias.api.calc",
    "per_query": "genderbias.api.calc",
    "measures_for": "genderbias.api.calc",
    "Figure": "genderbias.api.calc",
    "Metric": "genderbias.api.calc",
    "parse_measure": "genderbias.api.notation",
    "MeasureError": "genderbias.api.notation",
    "MEASURES": "genderbias.api.notation",
    "RaB": "genderbias.api.notation",
    "ARaB": "genderbias.api.notation",
    "NFaiRR": "genderbias.api.notation",
    "TExFAIR": "genderbias.api.notation",
    "AWRF": "genderbias.api.notation",
    "rKL": "genderbias.api.notation",
    "rND": "genderbias.api.notation",
    "rRD": "genderbias.api.notation",
    "CRBO": "genderbias.api.notation",
    "EE": "genderbias.api.notation",
    "GFR": "genderbias.api.notation",
    "load_run": "genderbias.api.inputs",
    "load_texts": "genderbias.api.inputs",
    "Texts": "genderbias.api.inputs",
    "MissingTextsError": "genderbias.api.inputs",
    "GenderWords": "genderbias.text.wordlists",
    "load_wordlist": "genderbias.text.wordlists",
}
__all__ = sorted(_PUBLIC)

# The measures join ir_measures' registry (ir_measures.parse_measure("ARaB@10")); light: no numpy.
importlib.import_module("genderbias.api.notation")


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'genderbias' has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})

"""What a measure of the groups' share of a ranking is: :class:`GroupMeasure`, one class per measure declaring
and computing it, and its registry. Light: no numpy until a measure is computed.

A new measure is one subclass in one module named in :data:`MODULES` (as ir_measures lists its measures'
modules); the vocabulary, :func:`genderbias.ranking.measures.evaluate_run` and :mod:`genderbias.api.notation`
read it from there. Groups are read as the exposure measures read them
(:func:`genderbias.ranking.exposure.alignment`), so every group measure sees the same documents in the same groups.
"""

from __future__ import annotations

import importlib
from typing import Any, ClassVar

__all__ = ["BETTER", "HIGHER", "LOWER", "MODULES", "TOWARDS_ZERO", "GroupMeasure", "registered"]

#: ``direction``: values closer to 0 are fairer (signed: positive leans male, negative female).
TOWARDS_ZERO = "closer to 0 is fairer"
#: ``direction``: higher values are fairer (1 is fair).
HIGHER = "higher is fairer"
#: ``direction``: lower values are fairer (0 is fair: rKL, rND, rRD, EE).
LOWER = "lower is fairer"
#: ``direction`` of the effectiveness measures: higher values are better rankings.
BETTER = "higher is better"

#: The modules declaring a :class:`GroupMeasure`, in the order of tables and plots.
MODULES = ("genderbias.ranking.expected_exposure", "genderbias.ranking.gfr")


class GroupMeasure:
    """One measure of how a ranking's attention falls on the groups, declared and computed in one class. Its
    attributes are :class:`genderbias.ranking.vocabulary.Measure`'s; :attr:`settings` names the
    ``ExposureSettings`` fields it reads, also its measure string's parameters.
    """

    name: ClassVar[str]
    title: ClassVar[str]
    direction: ClassVar[str]
    note: ClassVar[str]
    rab_like: ClassVar[bool] = False
    effectiveness: ClassVar[bool] = False
    variants: ClassVar[tuple[str, ...]] = ()
    #: The ``ExposureSettings`` fields it reads (its measure string's parameters).
    settings: ClassVar[tuple[str, ...]] = ()

    @property
    def parameters(self) -> tuple[str, ...]:
        """Its measure string's parameters: the settings it reads, τ, and what every bias measure reads."""
        return (*self.settings, "threshold", "ties", "tokenizer", "seed", "bound")

    def variant(self, settings: Any) -> str:
        """The variant label its results are stored under, naming the settings that are not the default."""
        return ""

    def columns(self, a_f, a_m, n, cutoffs, settings) -> dict:
        """``{"NAME@k": per-query values}`` for every cutoff, from the ``[queries × depth]`` alignments
        ``a_f``, ``a_m`` (0 for a neutral document or a rank past the list's ``n`` documents)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def registered() -> tuple[GroupMeasure, ...]:
    """One instance of each :class:`GroupMeasure` declared in :data:`MODULES`, in their order."""
    found = []
    for module in MODULES:
        found += [
            value()
            for value in vars(importlib.import_module(module)).values()
            if isinstance(value, type) and issubclass(value, GroupMeasure) and value.__module__ == module
        ]
    return tuple(found)

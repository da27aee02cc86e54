"""The bias measures as objects, written and parsed as ir_measures writes its own measures.

``ARaB@10``, ``RaB(magnitude='bool')@5``, ``NFaiRR(threshold=2.0)@10``, ``TExFAIR(variant='plain')@10``,
``AWRF(weights='trec')@10``, ``CRBO(p=0.8)@10``: a name, keyword parameters, ``@`` the cutoff. A
parameter left at its default is not written (``NFaiRR(threshold=1)@10`` is ``NFaiRR@10``), and the
defaults are the platform's (tie-aware; :data:`MEASURE_PARAMETERS`). Each measure is an
``ir_measures`` measure (a subclass of :class:`ir_measures.measures.base.Measure`): ``ARaB@10``
builds one, ``str`` writes it, and once bound to texts (:func:`genderbias.api.calc.measures_for`)
ir_measures' own ``calc_aggregate``/``iter_calc`` and
PyTerrier's ``pt.Experiment`` compute it beside nDCG@10 through ir_measures' runtime provider, which
takes any measure with a ``runtime_impl``.

Every parameter's value is read and checked by its rule (:meth:`genderbias.ranking.defaults.Rule.parse`
for a value written in a string, so a cutoff or a number goes through the one number reader,
:mod:`genderbias.numbers`: ASCII digits, bounded; ``check`` for a value given as it is); a bad one
is a :class:`~genderbias.errors.MeasureError` naming the measure and the parameter. Light: no numpy
until a measure is computed.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ir_measures.measures.base import MeanAgg, Measure, ParamInfo, register, registry

from genderbias.errors import MeasureError
from genderbias.ranking.defaults import (
    CRBO_P,
    CUTOFF_RULE,
    EXPOSURE_RULES,
    SEED_RULE,
    TIES_RULE,
    TOKENIZER_RULE,
    OptionError,
    Rule,
)
from genderbias.ranking.group_measure import GroupMeasure
from genderbias.ranking.vocabulary import BY_NAME, VOCABULARY

__all__ = [
    "AWRF", "CRBO", "EE", "GFR", "MEASURES", "MEASURE_PARAMETERS", "ARaB", "BiasMeasure", "MeasureError", "NFaiRR",
    "RaB", "TExFAIR", "parse_measure", "rKL", "rND", "rRD",
]  # fmt: skip

#: RaB/ARaB's gender magnitude and TExFAIR's variant (a report computes both, the paper's first).
MAGNITUDE_RULE = Rule("magnitude", BY_NAME["RaB"].variants[0], choices=tuple((v, v) for v in BY_NAME["RaB"].variants))
VARIANT_RULE = Rule(
    "variant",
    BY_NAME["TExFAIR"].variants[0],
    choices=tuple((v, v) for v in BY_NAME["TExFAIR"].variants),
    what="TExFAIR variant",
)
#: CRBO's persistence p (its depth is the measure's cutoff).
CRBO_P_RULE = Rule("p", CRBO_P, "number", minimum=0, maximum=1, open_bounds=True, what="RBO's p")
#: Which figure of a measure over the orders of tied documents: their expectation (under ``tie-aware``),
#: or the lowest or highest value any order gives.
BOUNDS = ("value", "low", "high")
BOUND_RULE = Rule("bound", BOUNDS[0], choices=tuple((bound, bound) for bound in BOUNDS))

#: Every parameter of a bias measure's string (``ARaB(magnitude=bool)@5``) by name, declared once: the
#: measures' declarations (:attr:`genderbias.ranking.vocabulary.Measure.parameters`) name them.
MEASURE_PARAMETERS: dict[str, Rule] = EXPOSURE_RULES | {
    "magnitude": MAGNITUDE_RULE,
    "variant": VARIANT_RULE,
    "ties": TIES_RULE,
    "tokenizer": TOKENIZER_RULE,
    "seed": SEED_RULE,
    "bound": BOUND_RULE,
}
#: What each parameter is, by its rule's name: ir_measures' description of a measure's parameters.
ABOUT = {
    "magnitude": "RaB/ARaB's gender magnitude of a document: tf, ln(1 + count) (the paper's), or bool, any occurrence",
    "variant": "TExFAIR's variant: rbdf, 1 − TED·RBDF (the paper's), or plain, 1 − TED",
    "p": "RBO's persistence p: the weight of rank d+1 relative to rank d",
    "bound": "value: the figure (tie-aware: its expectation over the orders of tied documents); low, high: the "
    "lowest and highest value an order of ties gives",
    "ties": "how tied documents are ordered: tie-aware (every order, the figure their expectation), trec_eval "
    "(docid descending) or file (the run's order)",
    "tokenizer": "how texts are split into words: words, or whitespace (the reference code's text.lower().split(' '))",
    "seed": "the seed of the orders of ties drawn when a tie has too many to take them all",
    "threshold": "NFaiRR's τ: documents with at most τ list words are neutral",
    "awrf_weights": "AWRF's position weights: dcg 1/log2(r+1), trec 1/log2(max(r,2)) or geometric p(1-p)^(r-1)",
    "awrf_p": "with geometric AWRF weights: the first rank's share of attention",
    "exposure_target": "the target female share of exposure (AWRF) and of each prefix (rKL, rND, rRD)",
    "protected_group": "rKL/rND/rRD's protected group",
    "cut_step": "rKL/rND/rRD's cut points: every this many ranks, and the cutoff",
    "exposure_form": "adapted (against the target share) or reference (as the cited papers' code computes them)",
}


class _NaNSkippingMean(MeanAgg):
    """The mean over the queries with a value, as the platform's reports take it (NFaiRR is
    undefined, NaN, for a query whose ideal ranking has no neutral document)."""

    def add(self, value: float) -> None:
        if not math.isnan(value):
            super().add(value)


class BiasMeasure(Measure):
    """A bias measure of the library; ``RULES`` maps each parameter to the rule it is read and checked by."""

    RULES: dict[str, Rule] = {}
    DEFAULT = float("nan")  # a query the run does not return has no value
    #: What ir_measures writes a measure with (its own measures set ``__name__`` in the class body).
    __name__ = property(lambda self: self.NAME)

    def __init__(self, texts: Any = None, counterfactual: Any = None, **params: Any) -> None:
        super().__init__(**params)
        #: What the measure reads besides the run (:func:`genderbias.api.calc.measures_for`): the texts; CRBO's counterfactual run.
        self.texts, self.counterfactual = texts, counterfactual
        self.params = self._checked(params)
        self.validated = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.SUPPORTED_PARAMS = {"cutoff": ParamInfo(dtype=int, desc="rank cutoff")} | {
            name: ParamInfo(default=rule.default, desc=ABOUT[rule.name]) for name, rule in cls.RULES.items()
        }

    def _checked(self, params: dict[str, Any]) -> dict[str, Any]:
        """Each value by its rule: a string as a person writes it (``Rule.parse``: numbers
        through :mod:`genderbias.numbers`, so ``@١٠`` or ``@99999999999999999999`` is refused here,
        not by the job that computes it), any other value as it is (``Rule.check``)."""
        checked = {}
        for name, value in params.items():
            rule = CUTOFF_RULE if name == "cutoff" else self.RULES.get(name)
            if rule is None:
                takes = ", ".join(["cutoff (@k)", *self.RULES])
                raise MeasureError(self.NAME, name, f"{self.NAME} takes no parameter {name!r}; it takes {takes}")
            if isinstance(value, str) and not value.strip():
                raise MeasureError(self.NAME, name, f"give a value of {name}")
            try:
                checked[name] = rule.parse(value) if isinstance(value, str) else rule.check(value)
            except OptionError as exc:
                raise MeasureError(self.NAME, name, exc.problem) from None
        return checked

    def __eq__(self, other: object) -> bool:
        """Equal to the same measure, and to the string ir_measures writes it as (``figures["ARaB@10"]``)."""
        return repr(self) == other if isinstance(other, str) else super().__eq__(other)

    __hash__ = Measure.__hash__

    def validate_params(self) -> None:
        """Checked when built (:meth:`_checked`): ir_measures' providers call this."""

    def __call__(self, **params: Any) -> BiasMeasure:
        texts = params.pop("texts", self.texts)
        counterfactual = params.pop("counterfactual", self.counterfactual)
        return type(self)(texts=texts, counterfactual=counterfactual, **(self.params | params))

    def __getitem__(self, name: str) -> Any:
        if name == "cutoff":
            return self.params.get("cutoff")
        return self.params.get(name, self.RULES[name].default)

    @property
    def cutoff(self) -> int:
        if self.params.get("cutoff") is None:
            raise MeasureError(str(self), "cutoff", f"give a cutoff: {self}@10")
        return self.params["cutoff"]

    def aggregator(self) -> MeanAgg:
        return _NaNSkippingMean()

    def runtime_impl(self, qrels, run):
        """ir_measures' runtime provider computes a measure that has this; a measure bound to texts
        (:func:`genderbias.api.calc.measures_for`) computes itself, an unbound one says so."""
        raise ValueError(f"{self} reads the documents' texts: bind it first, genderbias.measures_for(texts)")


class _CRBO(BiasMeasure):
    """CRBO@k: RBO of the run against the same ranker's run on the counterfactual collection
    (gendered words swapped): it reads that second run, not texts, so it is bound to it."""

    NAME = "CRBO"
    RULES = {"p": CRBO_P_RULE, "ties": TIES_RULE, "seed": SEED_RULE}


def _declared(metric) -> BiasMeasure:
    """The measure of a metric of the vocabulary: its parameters are those it declares
    (:attr:`genderbias.ranking.vocabulary.Measure.parameters`), each read by its one rule."""
    rules = {name: MEASURE_PARAMETERS[name] for name in metric.parameters}
    kind = type(f"_{metric.name}", (BiasMeasure,), {"NAME": metric.name, "RULES": rules})
    kind.__doc__ = type(metric).__doc__ if isinstance(metric, GroupMeasure) else metric.title
    return kind()


CRBO = _CRBO()
#: Every measure of the library by name, unbound, without a cutoff: one per bias measure of the vocabulary, CRBO.
MEASURES: dict[str, BiasMeasure] = {m.name: _declared(m) for m in VOCABULARY if m.parameters} | {"CRBO": CRBO}
RaB, ARaB, NFaiRR, TExFAIR = (MEASURES[name] for name in ("RaB", "ARaB", "NFaiRR", "TExFAIR"))
AWRF, rKL, rND, rRD, EE, GFR = (MEASURES[name] for name in ("AWRF", "rKL", "rND", "rRD", "EE", "GFR"))

# ir_measures knows them by name once genderbias is imported (``ir_measures.parse_measure("ARaB@10")``), as
# its own measures join its registry; computing one there without its texts says so by name (runtime_impl).
for _name, _measure in MEASURES.items():
    if _name not in registry:
        register(_measure, name=_name)

_WRITTEN = re.compile(r"^\s*(?P<name>[A-Za-z_]\w*)\s*(?:\((?P<params>[^()]*)\))?\s*(?:@\s*(?P<cutoff>\S+?))?\s*$")


def _value(text: str) -> str:
    """A parameter's value as written, unquoted (``'bool'``, ``bool``, ``2.0``, ``10``): its declaration
    reads it (:meth:`BiasMeasure._checked`), numbers through the one number reader."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def parse_measure(measure: str | BiasMeasure) -> BiasMeasure:
    """The measure ``measure`` writes (``"RaB(magnitude=bool)@5"``), or a :class:`MeasureError` naming
    the parameter at fault. ``str(parse_measure(text))`` writes it back as ir_measures does."""
    if isinstance(measure, BiasMeasure):
        return measure
    if not isinstance(measure, str):
        raise MeasureError(repr(measure), "", "a measure is a string such as 'ARaB@10' or a measure object")
    found = _WRITTEN.match(measure)
    if found is None:
        raise MeasureError(
            measure, "", "write a measure as Name(parameter=value, ...)@cutoff, e.g. RaB(magnitude=bool)@5"
        )
    name = found["name"]
    if name not in MEASURES:
        raise MeasureError(measure, "", f"unknown measure {name!r}; choose one of {', '.join(MEASURES)}")
    params: dict[str, Any] = {}
    for part in (found["params"] or "").split(","):
        if not part.strip():
            continue
        key, equals, text = part.partition("=")
        if not equals or not key.strip().isidentifier():
            raise MeasureError(measure, key.strip(), "write each parameter as name=value")
        params[key.strip()] = _value(text)
    if found["cutoff"] is not None:
        params["cutoff"] = _value(found["cutoff"])
    try:
        return MEASURES[name](**params)
    except MeasureError as exc:
        raise MeasureError(measure, exc.parameter, exc.problem) from None

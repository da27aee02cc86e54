"""The metrics' default parameters and the rules inputs are checked by (:class:`Rule`), light enough for forms and
settings objects: a page, the API and a command start from the same values without loading numpy, pandas or scipy
(names, directions and variants: :mod:`genderbias.ranking.vocabulary`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from genderbias.numbers import NumberError, parse_count, parse_counts, parse_decimal
from genderbias.text.tokenize import DEFAULT_TOKENIZER, TOKENIZERS

__all__ = [
    "AGGREGATIONS", "AWRF_WEIGHTS", "BACKGROUND_DEPTH", "COLLECTION_BACKGROUND", "CONFIDENCE_THRESHOLD", "CRBO_DEPTH",
    "CRBO_P", "CUTOFFS_RULE", "CUTOFF_RULE", "DEFAULT_AWRF_P", "DEFAULT_AWRF_WEIGHTS", "DEFAULT_CUTOFFS",
    "DEFAULT_CUT_STEP", "DEFAULT_EXPOSURE_FORM", "DEFAULT_EXPOSURE_TARGET", "DEFAULT_NORMALISER", "DEFAULT_PROTECTED",
    "DEFAULT_SAMPLES", "DEFAULT_SEED", "DEFAULT_THRESHOLD", "DEFAULT_TIES", "DISPUTED_POLICIES", "EXPOSURE_FORMS",
    "EXPOSURE_RULES", "LABEL_SOURCE", "LABEL_SOURCES", "LABEL_UNCERTAINTY_COLUMNS", "LEVEL", "LEVEL_PERCENT",
    "MAX_CUTOFF", "MAX_CUTOFFS", "NORMALISERS", "PROTECTED_GROUPS", "SEED_RULE", "SENSITIVITY_CUTOFFS", "TABLE_LAYOUTS",
    "TIES", "TIES_RULE", "TIE_DRAWS", "TOKENIZER_RULE", "VARIANT_VERSIONS", "OptionError", "Rule",
]  # fmt: skip

#: The confidence level of the library's bootstrap and Wilson intervals (the metrics', the agreement report's
#: alpha, a plan's shares), and how a text names it. The methods that take a test's alpha (0.05) instead keep it.
LEVEL = 0.95
LEVEL_PERCENT = f"{LEVEL:.0%}"
#: Rank cutoffs of the SIGIR 2020 tables.
DEFAULT_CUTOFFS = (5, 10, 20, 30)
#: Label sensitivity's cutoffs (each is a whole table of aggregations × policies × runs).
SENSITIVITY_CUTOFFS = (5, 10, 20)
#: The bounds of the cutoffs a form, the API or a command takes (each cutoff's measures cost a
#: pass over every run: a million cutoffs held a request for minutes): at most this many, each
#: at most :data:`MAX_CUTOFF` (the deepest rank a report reads).
MAX_CUTOFFS = 20
MAX_CUTOFF = 10000
#: How a run's tied documents (equal scores within a query) are ordered for the bias metrics
#: (:mod:`genderbias.ranking.ties`): ``tie-aware`` (default) takes every figure's expectation over all orders
#: of each tie group; ``trec_eval`` orders ties by docid descending (trec_eval's and ir_measures'
#: rule); ``file`` keeps the run's ranks as stored. Effectiveness always follows trec_eval.
TIES = ("tie-aware", "trec_eval", "file")
DEFAULT_TIES = "tie-aware"
#: A measure that is not linear in per-rank values (TExFAIR, AWRF, rKL, rND, rRD) is computed on
#: every arrangement of a query's tied top documents when there are at most this many, else on
#: this many drawn at random (the report's seed): :func:`genderbias.ranking.ties.tie_orders`.
TIE_DRAWS = 64
#: NFaiRR's background when no background run is given, and its variant label then.
COLLECTION_BACKGROUND = "collection"
#: How deep a background run is read for NFaiRR's ideal ranking.
BACKGROUND_DEPTH = 200
#: NFaiRR's τ: a document with at most this many representative words is neutral.
DEFAULT_THRESHOLD = 1
#: NFaiRR normalisers with a background run (see :mod:`genderbias.ranking.nfairr`'s docstring): the
#: background plus every compared run (default), or the background alone as the reference code.
NORMALISERS = ("comparison", "exact")
DEFAULT_NORMALISER = "comparison"
#: The exposure metrics (:mod:`genderbias.ranking.exposure`): AWRF's position weights (``dcg``, ``trec``,
#: ``geometric``) and the geometric weights' p; the target's female share of exposure; the
#: protected group of rKL/rND/rRD and their cut-point step (Yang & Stoyanovich: every 10 ranks).
AWRF_WEIGHTS = ("dcg", "trec", "geometric")
DEFAULT_AWRF_WEIGHTS = "dcg"
DEFAULT_AWRF_P = 0.5
DEFAULT_EXPOSURE_TARGET = 0.5
PROTECTED_GROUPS = ("female", "male")
DEFAULT_PROTECTED = "female"
DEFAULT_CUT_STEP = 10
#: The largest cut-point step (a step beyond the list's length leaves the one cut point min(k, n)).
MAX_CUT_STEP = 10_000
#: How the exposure metrics are defined (their wording: :data:`genderbias.ranking.vocabulary.FORM_DEFINITIONS`):
#: ``adapted`` (default), the platform's adaptation to documents ranked from a collection (the
#: target share as reference), or ``reference``, as the cited papers' reference code computes them.
EXPOSURE_FORMS = ("adapted", "reference")
DEFAULT_EXPOSURE_FORM = "adapted"
#: Bootstrap resamples and seed for confidence intervals.
DEFAULT_SAMPLES = 1000
DEFAULT_SEED = 0
#: Label sensitivity: the aggregations, the policies for disputed queries, and the least
#: confidence of a label under the ``confident`` policy (see :mod:`genderbias.crowd.sensitivity`).
AGGREGATIONS = ("majority", "dawid-skene", "wawa")
DISPUTED_POLICIES = ("drop", "aggregation", "adjudicated", "confident")
CONFIDENCE_THRESHOLD = 0.9
#: Label sensitivity of a batch labelled by a machine first: rows whose ``aggregation`` is
#: :data:`LABEL_SOURCE` and whose ``disputed`` column names where the labels came from.
LABEL_SOURCE = "label source"
LABEL_SOURCES = ("crowd only", "machine only", "hybrid")
#: CRBO (Abolghasemi et al., ECIR 2024): RBO's persistence p and the ranks compared.
CRBO_P = 0.9
CRBO_DEPTH = 10
#: Paired-variant preference: the version suffixes of a document's docids (male, female, neutral).
VARIANT_VERSIONS = ("m", "f", "n")
#: The papers' tables a report can be laid out as (:mod:`metrics.tables`), the first the default.
TABLE_LAYOUTS: tuple[str, ...] = ("ecir2024", "sigir2020", "exposure")
#: What a report on a batch's labels adds to each result (:mod:`genderbias.crowd.label_uncertainty`): the
#: label-corrected value, the interval with the labels' uncertainty and their share of its width,
#: the same for the paired difference against the baseline, and the t-test's p beside the combined one.
LABEL_UNCERTAINTY_COLUMNS = (
    "corrected",
    "combined_low",
    "combined_high",
    "label_share",
    "difference_low",
    "difference_high",
    "difference_corrected",
    "difference_combined_low",
    "difference_combined_high",
    "difference_label_share",
    "query_p_value",
)


class OptionError(ValueError):
    """A setting's value breaks its rule: ``field`` names the setting, ``problem`` says how."""

    def __init__(self, field: str, problem: str) -> None:
        self.field, self.problem = field, problem
        super().__init__(f"{field}: {problem}")


@dataclass(frozen=True)
class Rule:
    """What values one setting of the library's computations takes, and its one check: one of ``choices``; a number
    or a whole number (``count``) within bounds; rank ``cutoffs``; a word-list ``file``. The platform's report
    settings are these rules with the words a page and a command show around them."""

    name: str
    #: What applies when the setting is not given (``""``: none; a ``file``'s ``""``: the built-in list).
    default: Any
    kind: str = "choice"
    #: ``(value, label)`` pairs of a ``choice``.
    choices: tuple[tuple[str, str], ...] = ()
    #: Bounds of a number, a count or each cutoff; ``open_bounds``: strictly between them.
    minimum: float | None = None
    maximum: float | None = None
    open_bounds: bool = False
    #: Cutoffs: at most this many.
    most: int | None = None
    #: What a refusal calls the setting (``exposure form``); its name in words by default.
    what: str = ""

    @property
    def values(self) -> list[str]:
        return [value for value, _ in self.choices]

    @property
    def default_text(self) -> str:
        """The default as a person types it (``5,10,20,30``, ``0.5``)."""
        if self.kind == "cutoffs":
            return ",".join(str(c) for c in self.default)
        return (
            ""
            if self.default in (None, "")
            else f"{self.default:g}"
            if isinstance(self.default, float)
            else str(self.default)
        )

    @property
    def bounds_text(self) -> str:
        """The bounds in words (``in (0, 1)``, ``from 1 to 10000``), or ``""``."""
        if self.minimum is None and self.maximum is None:
            return ""
        if self.open_bounds:
            return f"in ({self.minimum:g}, {self.maximum:g})"
        if self.maximum is None:
            return f"at least {self.minimum:g}"
        return f"from {self.minimum:g} to {self.maximum:g}"

    def check(self, value: Any) -> Any:
        """``value`` if it keeps this setting's rule (cutoffs: sorted and distinct), else
        :class:`OptionError` naming the setting. The one check of each rule."""
        what = self.what or self.name.replace("_", " ")
        if self.kind == "choice":
            if value not in self.values and not (value == "" and self.default == ""):
                raise OptionError(self.name, f"unknown {what} {value!r}; choose one of {', '.join(self.values)}")
            return value
        if self.kind == "file":
            return value
        if self.kind == "cutoffs":
            try:
                values = sorted({int(c) for c in value})
                whole = all(not isinstance(c, bool) and int(c) == c for c in value)
            except (TypeError, ValueError):
                values, whole = [], False
            if not whole or not values or not self._within(values[0], values[-1]):
                raise OptionError(self.name, f"cutoffs must be whole numbers {self._range()}, got {list(value)}")
            if self.most is not None and len(values) > self.most:
                raise OptionError(self.name, f"at most {self.most} values (got {len(values)})")
            return tuple(values)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise OptionError(self.name, f"{what} must be a number, got {value!r}")
        if (self.kind == "count" and int(value) != value) or not self._within(value, value):
            if self.kind == "count":
                raise OptionError(self.name, f"{what} must be an integer {self._range()}, got {value}")
            if self.maximum is None and self.minimum == 0:
                raise OptionError(self.name, f"{what} must not be negative, got {value:g}")
            raise OptionError(self.name, f"{what} must lie {self._range()}, got {value:g}")
        return int(value) if self.kind == "count" else float(value)

    def _within(self, low: float, high: float) -> bool:
        if self.open_bounds:
            return self.minimum < low and high < self.maximum
        return (self.minimum is None or low >= self.minimum) and (self.maximum is None or high <= self.maximum)

    def _range(self) -> str:
        text = self.bounds_text
        return f"strictly between {self.minimum:g} and {self.maximum:g}" if self.open_bounds else text

    def parse(self, text: str) -> Any:
        """A value typed on the command line or a page (``5,10,20``, ``0.5``), checked; ``""``: the default."""

        if text is None or (isinstance(text, str) and not text.strip()):
            return self.default
        if not isinstance(text, str):  # a value given as it is (call_command's keyword arguments)
            return self.check(text)
        try:
            if self.kind == "cutoffs":
                return self.check(
                    parse_counts(text, self.name, minimum=int(self.minimum), maximum=int(self.maximum), most=self.most)
                )
            if self.kind == "count":  # the bounds given to the reader too: it names them for a 20-digit number
                low = 0 if self.minimum is None else math.ceil(self.minimum)
                high = 10**18 if self.maximum is None else math.floor(self.maximum)
                return self.check(parse_count(text, self.name, minimum=low, maximum=high))
            if self.kind == "number":
                return self.check(parse_decimal(text, self.name))
        except NumberError as exc:
            if self.kind == "cutoffs":  # the field first, as every refusal of a typed list says it
                raise OptionError(
                    self.name, f"{exc}; cutoffs are whole numbers {self._range()}, e.g. {self.default_text}"
                ) from None
            raise OptionError(self.name, exc.problem) from None
        return self.check(text)


def _choices(values: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    return tuple((value, value) for value in values)


#: One rank cutoff, where a figure is read at one depth (a measure's ``@k``).
CUTOFF_RULE = Rule("cutoff", 10, "count", minimum=1, maximum=MAX_CUTOFF, what="rank cutoff")
#: The rank cutoffs of a computation: whole numbers from 1 to :data:`MAX_CUTOFF`, at most :data:`MAX_CUTOFFS`.
CUTOFFS_RULE = Rule("cutoffs", DEFAULT_CUTOFFS, "cutoffs", minimum=1, maximum=MAX_CUTOFF, most=MAX_CUTOFFS)
#: The exposure metrics' settings (``genderbias.ranking.exposure.ExposureSettings``), by its field names.
EXPOSURE_RULES = {
    "weights": Rule("awrf_weights", DEFAULT_AWRF_WEIGHTS, choices=_choices(AWRF_WEIGHTS), what="AWRF weights"),
    "p": Rule(
        "awrf_p", DEFAULT_AWRF_P, "number", minimum=0, maximum=1, open_bounds=True, what="the geometric weights' p"
    ),
    "target": Rule(
        "exposure_target",
        DEFAULT_EXPOSURE_TARGET,
        "number",
        minimum=0,
        maximum=1,
        open_bounds=True,
        what="the target female share",
    ),
    "protected": Rule("protected_group", DEFAULT_PROTECTED, choices=_choices(PROTECTED_GROUPS), what="protected group"),
    "step": Rule("cut_step", DEFAULT_CUT_STEP, "count", minimum=1, maximum=MAX_CUT_STEP, what="the cut-point step"),
    "threshold": Rule("threshold", float(DEFAULT_THRESHOLD), "number", minimum=0, what="NFaiRR threshold"),
    "form": Rule("exposure_form", DEFAULT_EXPOSURE_FORM, choices=_choices(EXPOSURE_FORMS), what="exposure form"),
}
#: How a run's tied documents are ordered (:data:`TIES`).
TIES_RULE = Rule("ties", DEFAULT_TIES, choices=_choices(TIES), what="order of ties")
#: How texts are split into words (:data:`genderbias.text.tokenize.TOKENIZERS`).
TOKENIZER_RULE = Rule("tokenizer", DEFAULT_TOKENIZER, choices=_choices(TOKENIZERS), what="tokenizer")
#: The seed of what is drawn at random: the bootstrap's resamples, the orders of ties beyond :data:`TIE_DRAWS`.
SEED_RULE = Rule("seed", DEFAULT_SEED, "count", minimum=0, what="the seed")

"""A report's settings, declared once: name, kind, choices or bounds, default, label and help.

Every setting of a report (the cutoffs, the tokenizer, NFaiRR's τ and normaliser, the exposure
metrics' weights, p, target, protected group, cut step and form, the order of ties, the paper
preset, the bootstrap, the word lists) is one :class:`ReportOption` here. The shells read these
declarations, so they cannot drift apart: ``manage.py bias_report``'s and ``label_sensitivity``'s
arguments (:meth:`ReportOption.argument`), the report form's fields (``metrics.forms``), the API's
request serializer and so its OpenAPI schema (``metrics.api``), and the ``Report`` model's fields
(``metrics.models``, with the same choices, default and help). A value is checked by one function,
:meth:`ReportOption.check` (the services' ``ReportSettings.validate``, the exposure metrics'
``ExposureSettings.validate`` and the computing modules call it), so each rule has one check and
one message, which names the setting. Pure: no Django.

``tests/metrics/test_report_options.py`` fails when a default or a bound of a report setting is
written anywhere else in the product.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from genderbias.numbers import NumberError, parse_count, parse_counts, parse_decimal
from genderbias.presets import PRESETS
from genderbias.ranking.defaults import (
    AWRF_WEIGHTS,
    CRBO_P,
    DEFAULT_AWRF_P,
    DEFAULT_AWRF_WEIGHTS,
    DEFAULT_CUT_STEP,
    DEFAULT_CUTOFFS,
    DEFAULT_EXPOSURE_FORM,
    DEFAULT_EXPOSURE_TARGET,
    DEFAULT_NORMALISER,
    DEFAULT_PROTECTED,
    DEFAULT_SAMPLES,
    DEFAULT_SEED,
    DEFAULT_THRESHOLD,
    DEFAULT_TIES,
    EXPOSURE_FORMS,
    MAX_CUT_STEP,
    MAX_CUTOFF,
    MAX_CUTOFFS,
    NORMALISERS,
    PROTECTED_GROUPS,
    SENSITIVITY_CUTOFFS,
    TIE_DRAWS,
    TIES,
)
from genderbias.ranking.vocabulary import BY_NAME
from genderbias.text.tokenize import DEFAULT_TOKENIZER, TOKENIZERS

#: The kinds of setting: one of ``choices``; a number (``float``) or a whole number (``count``) within
#: bounds; rank ``cutoffs`` (whole numbers, each within bounds, at most ``most``); a word-list ``file``.
KINDS = ("choice", "number", "count", "cutoffs", "file")


class OptionError(ValueError):
    """A setting's value breaks its rule: ``field`` names the setting, ``problem`` says how."""

    def __init__(self, field: str, problem: str) -> None:
        self.field, self.problem = field, problem
        super().__init__(f"{field}: {problem}")


@dataclass(frozen=True)
class ReportOption:
    """One setting of a report, as every shell offers it and as one check reads it."""

    name: str
    #: ``(value, label)`` pairs of a ``choice``; the label is what a page shows.
    choices: tuple[tuple[str, str], ...]
    #: What applies when the setting is not given (``""``: none; a ``file``'s ``""``: the built-in list).
    default: Any
    label: str
    help: str
    kind: str = "choice"
    #: Bounds of a number, a count or each cutoff; ``open_bounds``: strictly between them.
    minimum: float | None = None
    maximum: float | None = None
    open_bounds: bool = False
    #: Cutoffs: at most this many.
    most: int | None = None
    #: The attribute of ``metrics.services.ReportSettings`` when it is not :attr:`name`.
    attribute: str = ""
    #: What a refusal calls the setting (``exposure form``); its label in lower case by default.
    what: str = ""

    @property
    def values(self) -> list[str]:
        return [value for value, _ in self.choices]

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def setting(self) -> str:
        """The name of the ``ReportSettings`` attribute holding this setting."""
        return self.attribute or self.name

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

    def describe(self) -> str:
        """The help with the bounds and the default, as a command's ``--help`` and the API state it."""
        parts = [self.help]
        if self.bounds_text and self.kind != "cutoffs":
            parts.append(self.bounds_text)
        text = ", ".join(parts)
        return f"{text} (default {self.default_text})" if self.default_text else text

    def check(self, value: Any) -> Any:
        """``value`` if it keeps this setting's rule (cutoffs: sorted and distinct), else
        :class:`OptionError` naming the setting. The one check of each rule."""
        what = self.what or self.label.lower()
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
            if self.kind == "count":
                return self.check(parse_count(text, self.name, maximum=10**18))
            if self.kind == "number":
                return self.check(parse_decimal(text, self.name))
        except NumberError as exc:
            if self.kind == "cutoffs":  # the field first, as every refusal of a typed list says it
                raise OptionError(
                    self.name, f"{exc}; cutoffs are whole numbers {self._range()}, e.g. {self.default_text}"
                ) from None
            raise OptionError(self.name, exc.problem) from None
        return self.check(text)

    def argument(self) -> dict:
        """``argparse`` keywords of the command-line option: its type reads and checks through :meth:`parse`."""
        import argparse

        if self.kind == "choice":
            return {"choices": self.values, "default": self.default or None, "help": self.describe()}
        if self.kind == "file":
            return {"default": None, "help": self.describe(), "metavar": "FILE"}

        def read(text: str) -> Any:
            try:
                return self.parse(text)
            except OptionError as exc:
                raise argparse.ArgumentTypeError(exc.problem) from None

        read.__name__ = self.kind  # argparse names the type in its message
        return {"type": read, "default": self.default, "help": self.describe().replace("%", "%%")}


CUTOFFS_OPTION = ReportOption(
    "cutoffs",
    (),
    DEFAULT_CUTOFFS,
    "Rank cutoffs",
    "comma-separated rank cutoffs (each cutoff's measures are a pass over every run)",
    kind="cutoffs",
    minimum=1,
    maximum=MAX_CUTOFF,
    most=MAX_CUTOFFS,
)
#: One rank cutoff, where a figure is read at one depth: comparing sets, what moves a label-corrected value,
#: a study plan, counterfactual RBO's depth.
CUTOFF_OPTION = ReportOption(
    "cutoff",
    (),
    10,
    "Rank cutoff",
    "the rank cutoff the figure is read at",
    kind="count",
    minimum=1,
    maximum=MAX_CUTOFF,
)
#: Label sensitivity's cutoffs: the same rule, three by default (each is a whole sensitivity table).
SENSITIVITY_CUTOFFS_OPTION = ReportOption(
    "cutoffs",
    (),
    SENSITIVITY_CUTOFFS,
    "Rank cutoffs",
    "comma-separated rank cutoffs",
    kind="cutoffs",
    minimum=1,
    maximum=MAX_CUTOFF,
    most=MAX_CUTOFFS,
)
TOKENIZER_OPTION = ReportOption(
    "tokenizer",
    # The values alone, as pooling's own tokenizer fields offer them: one enum in the OpenAPI schema.
    tuple((name, name) for name in TOKENIZERS),
    DEFAULT_TOKENIZER,
    "Tokenizer",
    "how documents are split into words for the word lists: words or whitespace (the reference code's "
    "text.lower().split(' '))",
    what="tokenizer",
)
THRESHOLD_OPTION = ReportOption(
    "threshold",
    (),
    float(DEFAULT_THRESHOLD),
    "NFaiRR threshold",
    "NFaiRR's τ: documents with at most τ list words are neutral",
    kind="number",
    minimum=0,
    what="NFaiRR threshold",
)
NORMALISER_OPTION = ReportOption(
    "nfairr_normaliser",
    (
        (NORMALISERS[0], "background + every run of the report (monotone, ≤ 1)"),
        (NORMALISERS[1], "background alone (original definition; may exceed 1)"),
    ),
    DEFAULT_NORMALISER,
    "NFaiRR normaliser (with a background run)",
    "with a background run: 'comparison' (the background plus every run given, one denominator for all, "
    "monotone and <= 1) or 'exact' (the background alone, the original definition; values above 1 are "
    "reported as such)",
    what="NFaiRR normaliser",
)
AWRF_WEIGHTS_OPTION = ReportOption(
    "awrf_weights",
    (
        (AWRF_WEIGHTS[0], "dcg: 1/log2(r+1), as NFaiRR and TExFAIR"),
        (AWRF_WEIGHTS[1], "trec: 1/log2(max(r,2)), TREC Fair Ranking's"),
        (AWRF_WEIGHTS[2], "geometric: p(1-p)^(r-1), Sapiezynski et al.'s"),
    ),
    DEFAULT_AWRF_WEIGHTS,
    "AWRF position weights",
    "AWRF's position weights: dcg 1/log2(r+1) (as NFaiRR and TExFAIR), trec 1/log2(max(r,2)) (TREC Fair "
    "Ranking's), geometric p(1-p)^(r-1) (Sapiezynski et al.'s, with the AWRF p)",
    what="AWRF weights",
)
AWRF_P_OPTION = ReportOption(
    "awrf_p",
    (),
    DEFAULT_AWRF_P,
    "AWRF geometric p",
    "with geometric AWRF weights: the first rank's share of attention",
    kind="number",
    minimum=0,
    maximum=1,
    open_bounds=True,
    what="the geometric weights' p",
)
EXPOSURE_TARGET_OPTION = ReportOption(
    "exposure_target",
    (),
    DEFAULT_EXPOSURE_TARGET,
    "Target female share",
    "the target female share of exposure (AWRF) and of each prefix (rKL, rND, rRD); 0.5: equal",
    kind="number",
    minimum=0,
    maximum=1,
    open_bounds=True,
    what="the target female share",
)
PROTECTED_OPTION = ReportOption(
    "protected_group",
    tuple((group, group) for group in PROTECTED_GROUPS),
    DEFAULT_PROTECTED,
    "rKL/rND/rRD protected group",
    "rKL/rND/rRD's protected group",
    what="protected group",
)
CUT_STEP_OPTION = ReportOption(
    "cut_step",
    (),
    DEFAULT_CUT_STEP,
    "rKL/rND/rRD cut step",
    "rKL/rND/rRD's cut points: every this many ranks, and the cutoff (Yang & Stoyanovich's: 10)",
    kind="count",
    minimum=1,
    maximum=MAX_CUT_STEP,
    what="the cut-point step",
)
EXPOSURE_FORM_OPTION = ReportOption(
    "exposure_form",
    (
        (EXPOSURE_FORMS[0], "adapted: the platform's, against the target share"),
        (EXPOSURE_FORMS[1], "reference: as the cited papers' code, against the list's own composition"),
    ),
    DEFAULT_EXPOSURE_FORM,
    "Exposure metrics' form",
    "AWRF, rKL, rND, rRD: adapted (the platform's, against the target share) or reference (as the cited "
    "papers' code computes them: FairRankTune's AWRF, Yang & Stoyanovich's FairRank; see docs/metrics.md)",
    what="exposure form",
)
TIES_OPTION = ReportOption(
    "ties",
    (
        (TIES[0], "tie-aware: every bias figure is its expectation over all orders of tied documents"),
        (TIES[1], "trec_eval: ties by docid descending, as trec_eval and ir_measures"),
        (TIES[2], "file: the run's own order (import the run with --order file to keep the file's)"),
    ),
    DEFAULT_TIES,
    "Tied documents",
    "how documents with equal scores are ordered for the bias metrics: tie-aware takes every figure's "
    "expectation over all orders of each tie group (exact for RaB, ARaB and NFaiRR; TExFAIR and the "
    f"exposure metrics over every order, or {TIE_DRAWS} drawn); trec_eval orders them by docid descending; file keeps "
    "the run's order. Effectiveness always follows trec_eval (ir_measures)",
    what="order of ties",
)
PRESET_OPTION = ReportOption(
    "preset",
    tuple((name, f"{name}: {preset.paper}") for name, preset in PRESETS.items()),
    "",
    "Paper preset",
    "set what a paper's tables were computed with (tokenizer, order of ties, cutoffs, NFaiRR's τ and "
    "normaliser, RaB's word list); the settings it names win over the same settings given beside it, and "
    "the report prints each",
    what="preset",
)
BOOTSTRAP_OPTION = ReportOption(
    "bootstrap",
    (),
    DEFAULT_SAMPLES,
    "Bootstrap resamples",
    "bootstrap resamples for the 95% confidence intervals",
    kind="count",
    minimum=1,
    attribute="bootstrap_samples",
    what="bootstrap samples",
)
SEED_OPTION = ReportOption(
    "seed", (), DEFAULT_SEED, "Bootstrap seed", "the bootstrap's seed", kind="count", minimum=0, what="the seed"
)
WORDLIST_OPTION = ReportOption(
    "wordlist",
    (),
    "",
    "Definitional word list",
    "'word,f|m' file for RaB/ARaB (default: the 32+32 definitional words)",
    kind="file",
)
REPRESENTATIVE_WORDLIST_OPTION = ReportOption(
    "representative_wordlist",
    (),
    "",
    "Representative word list",
    "'word,f|m' file for NFaiRR/TExFAIR (default: the built-in representative list of SIGIR 2021)",
    kind="file",
)

#: Every declared setting of a report, by name (label sensitivity's cutoffs are :data:`SENSITIVITY_CUTOFFS_OPTION`).
REPORT_OPTIONS = {
    option.name: option
    for option in (
        CUTOFFS_OPTION,
        TOKENIZER_OPTION,
        THRESHOLD_OPTION,
        NORMALISER_OPTION,
        AWRF_WEIGHTS_OPTION,
        AWRF_P_OPTION,
        EXPOSURE_TARGET_OPTION,
        PROTECTED_OPTION,
        CUT_STEP_OPTION,
        EXPOSURE_FORM_OPTION,
        TIES_OPTION,
        PRESET_OPTION,
        BOOTSTRAP_OPTION,
        SEED_OPTION,
        WORDLIST_OPTION,
        REPRESENTATIVE_WORDLIST_OPTION,
    )
}
#: The exposure metrics' settings (``genderbias.ranking.exposure.ExposureSettings``), by its field names.
EXPOSURE_OPTIONS = {
    "weights": AWRF_WEIGHTS_OPTION,
    "p": AWRF_P_OPTION,
    "target": EXPOSURE_TARGET_OPTION,
    "protected": PROTECTED_OPTION,
    "step": CUT_STEP_OPTION,
    "threshold": THRESHOLD_OPTION,
    "form": EXPOSURE_FORM_OPTION,
}

# --- the library's measures (genderbias.api.notation): settings a report computes in every variant ---

#: RaB/ARaB's gender magnitude (a report computes both, the paper's ``tf`` first).
MAGNITUDE_OPTION = ReportOption(
    "magnitude",
    tuple((variant, variant) for variant in BY_NAME["RaB"].variants),
    BY_NAME["RaB"].variants[0],
    "RaB magnitude",
    "RaB/ARaB's gender magnitude of a document: tf, ln(1 + count) (the paper's), or bool, any occurrence",
    what="magnitude",
)
#: TExFAIR's variant (a report computes both): ``rbdf`` (the paper's, 1 − TED·RBDF) or ``plain`` (1 − TED).
TEXFAIR_VARIANT_OPTION = ReportOption(
    "variant",
    tuple((variant, variant) for variant in BY_NAME["TExFAIR"].variants),
    BY_NAME["TExFAIR"].variants[0],
    "TExFAIR variant",
    "TExFAIR's variant: rbdf, 1 − TED·RBDF (the paper's), or plain, 1 − TED",
    what="TExFAIR variant",
)
#: CRBO's persistence p (its depth is the measure's cutoff, :data:`CUTOFF_OPTION`).
CRBO_P_OPTION = ReportOption(
    "p",
    (),
    CRBO_P,
    "RBO persistence",
    "RBO's persistence p: the weight of rank d+1 relative to rank d",
    kind="number",
    minimum=0,
    maximum=1,
    open_bounds=True,
    what="RBO's p",
)
#: Which figure of a measure over the orders of tied documents: their expectation (under ``tie-aware``),
#: or the lowest or highest value any order gives.
BOUNDS = ("value", "low", "high")
BOUND_OPTION = ReportOption(
    "bound",
    tuple((bound, bound) for bound in BOUNDS),
    BOUNDS[0],
    "Figure over tie orders",
    "value: the figure (tie-aware: its expectation over the orders of tied documents); low, high: the "
    "lowest and highest value an order of ties gives",
    what="bound",
)

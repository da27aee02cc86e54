"""A report's settings, declared once: name, kind, choices or bounds, default, label and help.

Every setting of a report is one :class:`ReportOption`: the rule the library checks the value by
(:class:`genderbias.ranking.defaults.Rule`, one check and one message naming the setting) with the
words the platform shows, which the library does not import. The shells read these declarations,
so they cannot drift apart: the commands' arguments (:func:`core.management.cli.add_option`), the
report form, the API's serializer and schema, and the ``Report`` model's fields. Pure: no Django.
``tests/metrics/test_report_options.py`` fails when a default or a bound is written anywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass

from genderbias.presets import PRESETS
from genderbias.ranking.defaults import (
    AWRF_WEIGHTS,
    CUTOFF_RULE,
    CUTOFFS_RULE,
    DEFAULT_NORMALISER,
    DEFAULT_SAMPLES,
    EXPOSURE_FORMS,
    EXPOSURE_RULES,
    NORMALISERS,
    SEED_RULE,
    SENSITIVITY_CUTOFFS,
    TIE_DRAWS,
    TIES,
    TIES_RULE,
    TOKENIZER_RULE,
    Rule,
)


@dataclass(frozen=True, kw_only=True)
class ReportOption(Rule):
    """One setting of a report: a :class:`~genderbias.ranking.defaults.Rule` (its values and its one check,
    :meth:`~genderbias.ranking.defaults.Rule.check`) with the words every shell shows around it."""

    label: str
    help: str
    #: The attribute of ``metrics.services.ReportSettings`` when it is not :attr:`name`.
    attribute: str = ""

    def __post_init__(self) -> None:
        if not self.what:  # a refusal calls the setting by its label by default
            object.__setattr__(self, "what", self.label.lower())

    @property
    def setting(self) -> str:
        """The name of the ``ReportSettings`` attribute holding this setting."""
        return self.attribute or self.name

    def describe(self) -> str:
        """The help with the bounds and the default, as a command's ``--help`` and the API state it."""
        parts = [self.help]
        if self.bounds_text and self.kind != "cutoffs":
            parts.append(self.bounds_text)
        text = ", ".join(parts)
        return f"{text} (default {self.default_text})" if self.default_text else text


def _worded(rule: Rule, label: str, help: str, **words) -> ReportOption:
    """A library rule with the words a page and a command show around it (``words``: choices' labels, a default)."""
    return ReportOption(**(vars(rule) | {"label": label, "help": help} | words))


#: The kinds of setting: one of ``choices``; a number (``float``) or a whole number (``count``) within
#: bounds; rank ``cutoffs`` (whole numbers, each within bounds, at most ``most``); a word-list ``file``.
CUTOFFS_OPTION = _worded(
    CUTOFFS_RULE,
    label="Rank cutoffs",
    help="comma-separated rank cutoffs (each cutoff's measures are a pass over every run)",
)
#: One rank cutoff, where a figure is read at one depth: comparing sets, what moves a label-corrected value,
#: a study plan, counterfactual RBO's depth.
CUTOFF_OPTION = _worded(CUTOFF_RULE, label="Rank cutoff", help="the rank cutoff the figure is read at")
#: Label sensitivity's cutoffs: the same rule, three by default (each is a whole sensitivity table).
SENSITIVITY_CUTOFFS_OPTION = _worded(
    CUTOFFS_RULE, label="Rank cutoffs", help="comma-separated rank cutoffs", default=SENSITIVITY_CUTOFFS
)
#: The rule's choices, the values alone, as pooling's own tokenizer fields offer them: one enum in the OpenAPI schema.
TOKENIZER_OPTION = _worded(
    TOKENIZER_RULE,
    label="Tokenizer",
    help="how documents are split into words for the word lists: words or whitespace (the reference code's "
    "text.lower().split(' '))",
)
THRESHOLD_OPTION = _worded(
    EXPOSURE_RULES["threshold"],
    label="NFaiRR threshold",
    help="NFaiRR's τ: documents with at most τ list words are neutral",
)
NORMALISER_OPTION = ReportOption(
    "nfairr_normaliser",
    DEFAULT_NORMALISER,
    choices=(
        (NORMALISERS[0], "background + every run of the report (monotone, ≤ 1)"),
        (NORMALISERS[1], "background alone (original definition; may exceed 1)"),
    ),
    label="NFaiRR normaliser (with a background run)",
    help="with a background run: 'comparison' (the background plus every run given, one denominator for all, "
    "monotone and <= 1) or 'exact' (the background alone, the original definition; values above 1 are "
    "reported as such)",
    what="NFaiRR normaliser",
)
AWRF_WEIGHTS_OPTION = _worded(
    EXPOSURE_RULES["weights"],
    label="AWRF position weights",
    help="AWRF's position weights: dcg 1/log2(r+1) (as NFaiRR and TExFAIR), trec 1/log2(max(r,2)) (TREC Fair "
    "Ranking's), geometric p(1-p)^(r-1) (Sapiezynski et al.'s, with the AWRF p)",
    choices=(
        (AWRF_WEIGHTS[0], "dcg: 1/log2(r+1), as NFaiRR and TExFAIR"),
        (AWRF_WEIGHTS[1], "trec: 1/log2(max(r,2)), TREC Fair Ranking's"),
        (AWRF_WEIGHTS[2], "geometric: p(1-p)^(r-1), Sapiezynski et al.'s"),
    ),
)
AWRF_P_OPTION = _worded(
    EXPOSURE_RULES["p"],
    label="AWRF geometric p",
    help="with geometric AWRF weights: the first rank's share of attention",
)
EXPOSURE_TARGET_OPTION = _worded(
    EXPOSURE_RULES["target"],
    label="Target female share",
    help="the target female share of exposure (AWRF) and of each prefix (rKL, rND, rRD); 0.5: equal",
)
PROTECTED_OPTION = _worded(
    EXPOSURE_RULES["protected"], label="rKL/rND/rRD protected group", help="rKL/rND/rRD's protected group"
)
CUT_STEP_OPTION = _worded(
    EXPOSURE_RULES["step"],
    label="rKL/rND/rRD cut step",
    help="rKL/rND/rRD's cut points: every this many ranks, and the cutoff (Yang & Stoyanovich's: 10)",
)
EXPOSURE_FORM_OPTION = _worded(
    EXPOSURE_RULES["form"],
    label="Exposure metrics' form",
    help="AWRF, rKL, rND, rRD: adapted (the platform's, against the target share) or reference (as the cited "
    "papers' code computes them: FairRankTune's AWRF, Yang & Stoyanovich's FairRank; see docs/metrics.md)",
    choices=(
        (EXPOSURE_FORMS[0], "adapted: the platform's, against the target share"),
        (EXPOSURE_FORMS[1], "reference: as the cited papers' code, against the list's own composition"),
    ),
)
TIES_OPTION = _worded(
    TIES_RULE,
    choices=(
        (TIES[0], "tie-aware: every bias figure is its expectation over all orders of tied documents"),
        (TIES[1], "trec_eval: ties by docid descending, as trec_eval and ir_measures"),
        (TIES[2], "file: the run's own order (import the run with --order file to keep the file's)"),
    ),
    label="Tied documents",
    help="how documents with equal scores are ordered for the bias metrics: tie-aware takes every figure's "
    "expectation over all orders of each tie group (exact for RaB, ARaB and NFaiRR; TExFAIR and the "
    f"exposure metrics over every order, or {TIE_DRAWS} drawn); trec_eval orders them by docid descending; file keeps "
    "the run's order. Effectiveness always follows trec_eval (ir_measures)",
)
PRESET_OPTION = ReportOption(
    "preset",
    "",
    choices=tuple((name, f"{name}: {preset.paper}") for name, preset in PRESETS.items()),
    label="Paper preset",
    help="set what a paper's tables were computed with (tokenizer, order of ties, cutoffs, NFaiRR's τ and "
    "normaliser, RaB's word list); the settings it names win over the same settings given beside it, and "
    "the report prints each",
    what="preset",
)
BOOTSTRAP_OPTION = ReportOption(
    "bootstrap",
    DEFAULT_SAMPLES,
    label="Bootstrap resamples",
    help="bootstrap resamples for the 95% confidence intervals",
    kind="count",
    minimum=1,
    attribute="bootstrap_samples",
    what="bootstrap samples",
)
SEED_OPTION = _worded(SEED_RULE, label="Bootstrap seed", help="the bootstrap's seed")
WORDLIST_OPTION = ReportOption(
    "wordlist",
    "",
    label="Definitional word list",
    help="'word,f|m' file for RaB/ARaB (default: the 32+32 definitional words)",
    kind="file",
)
REPRESENTATIVE_WORDLIST_OPTION = ReportOption(
    "representative_wordlist",
    "",
    label="Representative word list",
    help="'word,f|m' file for NFaiRR/TExFAIR (default: the built-in representative list of SIGIR 2021)",
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

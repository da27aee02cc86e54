"""The one vocabulary of the metrics: one declaration per measure, as ir_measures declares its own (name, which
values are fairer or better, RaB-likeness, variants, what values mean, its measure string's parameters).

Every place that needs a metric's properties takes them from here, as :mod:`genderbias.labels` for labels: the
order of tables and plots, the plots' zero line and axis note, the variants computed, the measure strings of
:mod:`genderbias.api.notation`. :class:`~genderbias.ranking.group_measure.GroupMeasure` classes (EE, GFR) join it
from their modules. Pure and light (no numpy), so forms and settings may use it.
"""

from __future__ import annotations

from dataclasses import dataclass

from genderbias.ranking.defaults import EXPOSURE_FORMS
from genderbias.ranking.group_measure import BETTER, HIGHER, LOWER, TOWARDS_ZERO, GroupMeasure, registered

__all__ = [
    "BETTER", "BY_NAME", "EFFECTIVENESS", "EXPOSURE", "FORM_DEFINITIONS", "GROUP_MEASURES", "HIGHER", "LOWER",
    "MEASURE_ALIASES", "METRICS", "PRIMARY_VARIANTS", "RAB_LIKE", "REFERENCE_TOKEN", "TOWARDS_ZERO", "VOCABULARY",
    "ExposureForm", "Measure", "form_statement", "is_rab_like", "metric_position", "note", "variant_form",
    "variant_position",
]  # fmt: skip


@dataclass(frozen=True)
class Measure:
    name: str  #: stored in results and shown in tables and plots
    title: str  #: the full name, as in its paper
    rab_like: bool  #: a signed balance of gendered magnitudes (RaB, ARaB): 0 is unbiased
    direction: str  #: :data:`TOWARDS_ZERO`, :data:`HIGHER`, :data:`LOWER` or :data:`BETTER`
    variants: tuple[str, ...]  #: variants computed, the paper's first; () when named by the background or qrels
    note: str  #: what a value means, in a few words (the plots' axis label)
    effectiveness: bool = False  #: a retrieval effectiveness measure (ir_measures), judged by qrels
    #: Its measure string's parameters (:mod:`genderbias.api.notation`), each declared once in
    #: :data:`genderbias.api.notation.MEASURE_PARAMETERS`; () for the effectiveness measures (ir_measures' own).
    parameters: tuple[str, ...] = ()


#: Each bias measure's parameters: every one reads how ties are ordered and the texts' tokenizer, and gives a
#: ``bound``; AWRF, rKL, rND, rRD read the exposure settings (``genderbias.ranking.exposure.ExposureSettings``).
_READS = ("ties", "tokenizer")
_RAB, _NFAIRR = ("magnitude", *_READS, "bound"), ("threshold", *_READS, "bound")
_TEXFAIR = ("variant", *_READS, "seed", "bound")
_EXPOSURE = ("weights", "p", "target", "protected", "step", "threshold", "form", *_READS, "seed", "bound")
_LIST = "0: fair, 1: most unfair"

#: The measures declared and computed by one class each (:mod:`genderbias.ranking.group_measure`): EE, GFR.
GROUP_MEASURES: tuple[GroupMeasure, ...] = registered()

VOCABULARY: tuple[Measure | GroupMeasure, ...] = (
    Measure("RaB", "Rank Bias", True, TOWARDS_ZERO, ("tf", "bool"), "positive: towards male", parameters=_RAB),
    Measure("ARaB", "Average Rank Bias", True, TOWARDS_ZERO, ("tf", "bool"), "positive: towards male", parameters=_RAB),
    Measure("NFaiRR", "Normalized Fairness of Retrieval Results", False, HIGHER, (), "1: fair", parameters=_NFAIRR),
    Measure(
        "TExFAIR", "Term Exposure-based Fairness", False, HIGHER, ("rbdf", "plain"), "1: fair", parameters=_TEXFAIR
    ),
    # Exposure-based group fairness (genderbias.ranking.exposure); the variant names the settings (weights or
    # protected group, the target when not 1/2), so no variant is "the paper's".
    Measure(
        "AWRF", "Attention-Weighted Rank Fairness", False, HIGHER, (), "1: fair (1 − JSD, nats)", parameters=_EXPOSURE
    ),
    Measure("rKL", "Normalized discounted KL-divergence", False, LOWER, (), _LIST, parameters=_EXPOSURE),
    Measure("rND", "Normalized discounted difference", False, LOWER, (), _LIST, parameters=_EXPOSURE),
    Measure("rRD", "Normalized discounted ratio", False, LOWER, (), _LIST, parameters=_EXPOSURE),
    *GROUP_MEASURES,
    # Effectiveness (ir_measures names; the variant is the qrels' name). RR's mean over queries is MRR.
    Measure("RR", "Reciprocal Rank (mean: MRR)", False, BETTER, (), "1: first result relevant", True),
    Measure("nDCG", "Normalized Discounted Cumulative Gain", False, BETTER, (), "1: ideal ranking", True),
    Measure("R", "Recall", False, BETTER, (), "1: every relevant document retrieved", True),
    Measure("P", "Precision", False, BETTER, (), "share of results relevant", True),
    Measure("AP", "Average Precision (mean: MAP)", False, BETTER, (), "1: ideal ranking", True),
)

#: Name -> metric.
BY_NAME: dict[str, Measure | GroupMeasure] = {metric.name: metric for metric in VOCABULARY}
#: Measure names in the order of the papers' tables.
METRICS: tuple[str, ...] = tuple(metric.name for metric in VOCABULARY)
#: The RaB-like metrics, computed together from one rank-bias table per variant.
RAB_LIKE: tuple[str, ...] = tuple(metric.name for metric in VOCABULARY if metric.rab_like)
#: The exposure-based group fairness metrics (:mod:`genderbias.ranking.exposure`), computed in every report.
EXPOSURE: tuple[str, ...] = ("AWRF", "rKL", "rND", "rRD")
#: The effectiveness measures a report may add (``--measures``), by their ir_measures names.
EFFECTIVENESS: tuple[str, ...] = tuple(metric.name for metric in VOCABULARY if metric.effectiveness)
#: Other names people give them: ``MRR@10`` is ``RR@10`` (a run's mean of RR is its MRR).
MEASURE_ALIASES: dict[str, str] = {"MRR": "RR", "MAP": "AP", "Recall": "R", "NDCG": "nDCG", "ndcg": "nDCG"}
#: The variant each metric's paper reports (shown first): ``tf`` for RaB/ARaB, ``rbdf`` for TExFAIR.
PRIMARY_VARIANTS: frozenset[str] = frozenset(metric.variants[0] for metric in VOCABULARY if metric.variants)


def is_rab_like(name: str) -> bool:
    """RaB-like metrics are signed around 0 (the plots draw a line there)."""
    return name in BY_NAME and BY_NAME[name].rab_like


def note(name: str) -> str:
    """What a value of the metric means (its name for an unknown metric)."""
    return BY_NAME[name].note if name in BY_NAME else name


def metric_position(name: str) -> int:
    """Place of a metric in tables and plots (the papers' order; unknown names last)."""
    return METRICS.index(name) if name in BY_NAME else len(METRICS)


def variant_position(variant: str) -> tuple[int, str]:
    """Place of a variant within its metric: the paper's variant first, then by name."""
    return (0, "") if variant in PRIMARY_VARIANTS else (1, variant)


# --- the exposure metrics' two forms ---------------------------------------------------------


@dataclass(frozen=True)
class ExposureForm:
    """One way of defining the exposure metrics (``--exposure-form``; :mod:`genderbias.ranking.exposure`), and
    how each family of them stands to the paper the methods text cites for it."""

    name: str  #: stored on the report (``Report.exposure_form``); ``reference`` is written into the variant
    title: str
    awrf: str  #: AWRF (Sapiezynski et al. 2019) in this form, and how it differs from the paper's code
    rank: str  #: rKL, rND, rRD (Yang & Stoyanovich 2017) in this form, and how it differs


#: The token a reference-form result carries in its variant (``female,reference``, ``dcg,reference``).
REFERENCE_TOKEN = "reference"

FORM_DEFINITIONS: dict[str, ExposureForm] = {
    form.name: form
    for form in (
        ExposureForm(
            "adapted",
            "the platform's adapted form",
            "AWRF in the platform's adapted form (TREC Fair Ranking 2021-22's): 1 minus the Jensen-Shannon "
            "divergence between the groups' shares of attention and the target share; it differs from the "
            "reference code (FairRankTune), which compares the groups' attention per member in the ranked "
            "list by the ratio of the smaller to the larger, so that the list's own composition is the reference",
            "rKL, rND and rRD in the platform's adapted form: each prefix's protected share is compared with "
            "the target share, not with the protected share of the whole ranked list, which would call a list "
            "of one gender only fair; the normaliser is the exact maximum over lists with the same cut points "
            "(the reference code's: rankings generated from the same items, sampled); the list's end is "
            "a cut point too; the discount is 1/log2 i as printed in the paper (the code: 1/log2(i + 1)); rKL is "
            "in nats without the code's 0.001 floor, and rRD counts an all-protected prefix as fair (the code: "
            "as the most unfair)",
        ),
        ExposureForm(
            "reference",
            "the reference form of the cited papers' code",
            "AWRF in the reference form (FairRankTune's AWRF with its min-max ratio): the smaller over the larger "
            "of the two groups' attention per member in the ranked list, 1 being fair; a list of one group only "
            "scores 1, one without a gendered document is undefined and left out",
            "rKL, rND and rRD in the reference form (Yang and Stoyanovich's code): each prefix at the cut points "
            "(every step ranks) against the protected share of the whole ranked list, discount 1/log2(i + 1) "
            "(the paper prints 1/log2 i), rKL with the code's 0.001 floor for a prefix share of 0 or 1, rRD "
            "counting an all-protected prefix as most unfair, as the code does; normalised as the code "
            "normalises, by the larger of the values expected of the rankings its generator makes from the "
            "list's documents at fairness probability 0 (protected last) and 0.98 (0.5 for rRD), where the code "
            "averages 10 sampled rankings each; a list of one group only, or without a cut point before its end, "
            "is undefined and left out",
        ),
    )
}


assert tuple(FORM_DEFINITIONS) == EXPOSURE_FORMS


def variant_form(variant: str) -> str:
    """The form an exposure metric's stored variant label was computed in (``reference`` when it
    carries :data:`REFERENCE_TOKEN`, else ``adapted``)."""
    return "reference" if REFERENCE_TOKEN in str(variant).split(",") else "adapted"


def form_statement(form: str, metrics) -> str:
    """Which form the exposure metrics among ``metrics`` were computed in and how it differs from the
    papers cited for them, as one text for the methods paragraph, the tables' notes and the report
    page (empty when no exposure metric is among them)."""
    chosen = FORM_DEFINITIONS[form]
    present = set(metrics)
    parts = []
    if "AWRF" in present:
        parts.append(chosen.awrf)
    if present & {"rKL", "rND", "rRD"}:
        parts.append(chosen.rank)
    return "".join(f"{part}. " for part in parts).strip()

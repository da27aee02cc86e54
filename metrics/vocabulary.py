"""The one vocabulary of the metrics: each metric's name, which values are fairer (or, for the
effectiveness measures, better), whether it is RaB-like, its variants and what its values mean.

Every place that needs a metric's properties takes them from here, in the spirit of
:mod:`annotation.labels`: the order of tables and plots (:mod:`metrics.formatting`,
:mod:`metrics.plots`), the zero line and axis note of the plots, and the variants the measures
compute (:mod:`metrics.measures`). Pure and light (no numpy), so forms and settings may use it.
"""

from __future__ import annotations

from dataclasses import dataclass

#: ``direction``: values closer to 0 are fairer (signed: positive leans male, negative female).
TOWARDS_ZERO = "closer to 0 is fairer"
#: ``direction``: higher values are fairer (1 is fair).
HIGHER = "higher is fairer"
#: ``direction``: lower values are fairer (0 is fair, 1 the most unfair: rKL, rND, rRD).
LOWER = "lower is fairer"
#: ``direction`` of the effectiveness measures: higher values are better rankings.
BETTER = "higher is better"


@dataclass(frozen=True)
class Metric:
    name: str  #: stored in results and shown in tables and plots
    title: str  #: the full name, as in its paper
    rab_like: bool  #: a signed balance of gendered magnitudes (RaB, ARaB): 0 is unbiased
    direction: str  #: :data:`TOWARDS_ZERO`, :data:`HIGHER`, :data:`LOWER` or :data:`BETTER`
    variants: tuple[str, ...]  #: variants computed, the paper's first; () when named by the background or qrels
    note: str  #: what a value means, in a few words (the plots' axis label)
    effectiveness: bool = False  #: a retrieval effectiveness measure (ir_measures), judged by qrels


VOCABULARY: tuple[Metric, ...] = (
    Metric("RaB", "Rank Bias", True, TOWARDS_ZERO, ("tf", "bool"), "positive: towards male"),
    Metric("ARaB", "Average Rank Bias", True, TOWARDS_ZERO, ("tf", "bool"), "positive: towards male"),
    Metric("NFaiRR", "Normalized Fairness of Retrieval Results", False, HIGHER, (), "1: fair"),
    Metric("TExFAIR", "Term Exposure-based Fairness", False, HIGHER, ("rbdf", "plain"), "1: fair"),
    # Exposure-based group fairness (metrics.exposure); the variant names the settings (weights or
    # protected group, the target when not 1/2), so no variant is "the paper's".
    Metric("AWRF", "Attention-Weighted Rank Fairness", False, HIGHER, (), "1: fair (1 − JSD, nats)"),
    Metric("rKL", "Normalized discounted KL-divergence", False, LOWER, (), "0: fair, 1: most unfair"),
    Metric("rND", "Normalized discounted difference", False, LOWER, (), "0: fair, 1: most unfair"),
    Metric("rRD", "Normalized discounted ratio", False, LOWER, (), "0: fair, 1: most unfair"),
    # Effectiveness (ir_measures names; the variant is the qrels' name). RR's mean over queries is MRR.
    Metric("RR", "Reciprocal Rank (mean: MRR)", False, BETTER, (), "1: first result relevant", True),
    Metric("nDCG", "Normalized Discounted Cumulative Gain", False, BETTER, (), "1: ideal ranking", True),
    Metric("R", "Recall", False, BETTER, (), "1: every relevant document retrieved", True),
    Metric("P", "Precision", False, BETTER, (), "share of results relevant", True),
    Metric("AP", "Average Precision (mean: MAP)", False, BETTER, (), "1: ideal ranking", True),
)

#: Name -> metric.
BY_NAME: dict[str, Metric] = {metric.name: metric for metric in VOCABULARY}
#: Metric names in the order of the papers' tables.
METRICS: tuple[str, ...] = tuple(metric.name for metric in VOCABULARY)
#: The RaB-like metrics, computed together from one rank-bias table per variant.
RAB_LIKE: tuple[str, ...] = tuple(metric.name for metric in VOCABULARY if metric.rab_like)
#: The exposure-based group fairness metrics (:mod:`metrics.exposure`), computed in every report.
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

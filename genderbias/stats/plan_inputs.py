"""A study plan's inputs: the pilot's paired differences, and the non-gendered share of a pool with its interval.

Pure (numpy, scipy; no Django). The plan (``metrics.services.planning``) reads a pilot's per-query
values and a pool's labels; the arithmetic on them is here, beside :mod:`genderbias.stats.power`, which
turns the pilot's differences into the queries needed: the pilot's A − B and its moments
(:func:`paired_differences`, :func:`pilot_moments`), a share with Wilson's interval
(:func:`share_interval`), the pooled queries to annotate for a number of non-gendered ones
(:func:`pooled_to_annotate`), how much wider a report on a batch's labels makes a difference's
interval (:func:`label_width_factor`), and the expert audit sample a batch needs for a target width of its
prediction-powered interval and the hours to label it (:func:`audit_size_for_width`, :func:`audit_hours`; issue
81; the smallest audit worth drawing is ``genderbias.crowd.audit_size.suggested_audit_size``'s rule).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from genderbias.ranking.defaults import LEVEL

#: SIGIR 2020's annotated MS MARCO dev queries (Rekabsaz & Schedl 2020; the GenderBias_IR
#: repository's ``queries_gender_annotated.csv``): 1,765 of 3,750 non-gendered. The share a plan
#: assumes when nothing better is known, stated as such.
SIGIR2020_NON_GENDERED = (1765, 3750)


def share_interval(successes: int, total: int, level: float = LEVEL) -> tuple[float, float, float]:
    """``(share, low, high)``: a proportion and its Wilson interval
    (:func:`genderbias.stats.intervals.wilson_interval`; the study plan's shares)."""
    from genderbias.stats.intervals import wilson_interval  # start-up: the plan's form loads no numpy

    if total <= 0:
        raise ValueError("no labelled queries to estimate a share from")
    low, high = wilson_interval(successes / total, total, level=level)
    return successes / total, float(low), float(high)


def paired_differences(a, b) -> tuple[tuple[str, ...], Any]:
    """``(qids, A − B)`` over the queries both per-query series (pandas, indexed by query) have a value for."""
    import numpy as np  # start-up: the plan's form and command load this module, which loads no numpy

    joined = a.rename("a").to_frame().join(b.rename("b"), how="inner").dropna()
    return tuple(str(q) for q in joined.index), (joined["a"] - joined["b"]).to_numpy(dtype=np.float64)


def pilot_moments(differences: Sequence[float]) -> tuple[float, float]:
    """``(mean, sd)`` of a pilot's paired per-query differences (sd with n − 1), as the plan states them."""
    import numpy as np  # start-up, as above

    values = np.asarray(differences, dtype=np.float64)
    return float(np.mean(values)), float(np.std(values, ddof=1))


def pooled_to_annotate(needed: int, share: float) -> int:
    """Pooled queries to annotate so that about ``needed`` are non-gendered: ⌈needed / share⌉."""
    if not 0 < share <= 1:
        raise ValueError(f"the non-gendered share must be in (0, 1], got {share}")
    return math.ceil(needed / share - 1e-9)


def label_width_factor(query_widths: Sequence[float], combined_widths: Sequence[float]) -> float | None:
    """r: the combined interval's width over the query-only interval's, for paired differences of a
    report on a batch's labels (the median over the rows given; None where no row has both).

    Why: such a report tests a difference by its combined interval (queries and labels), which is r
    times as wide as the query-only one around an estimate whose own noise is r times as large. To first
    order its test is then the paired t-test at Δ/r, and it needs about r² times the queries. The plan
    sizes that test (``metrics.services.planning``); the coverage studies set the power it promises
    against the power delivered on simulated crowds (:mod:`genderbias.crowd.simulation.coverage`)."""
    import numpy as np  # start-up, as above

    query = np.asarray(query_widths, dtype=np.float64)
    combined = np.asarray(combined_widths, dtype=np.float64)
    usable = np.isfinite(query) & np.isfinite(combined) & (query > 0) & (combined > 0)
    if not usable.any():
        return None
    return float(np.median(combined[usable] / query[usable]))


def tested_difference(delta: float, factor: float | None) -> float:
    """The Δ the paired t-test is simulated at for a test whose interval is ``factor`` (r) times as wide:
    Δ/r (:func:`label_width_factor`); Δ itself where there is no r (labels taken as known)."""
    return delta / factor if factor else delta


def audit_size_for_width(sd: float, share: float, width: float, level: float = LEVEL) -> int:
    """Audited queries for a 95% (``level``) interval of a class mean (or a paired difference of two runs'
    means over the class) of full width ``width``: ⌈(2 z σ / w)² / share⌉, σ the values' standard deviation
    within the class, ``share`` the class's share of the batch.

    Why this formula: the audit-based interval (PPI++, :mod:`genderbias.machine.proportions`) tests
    E[(v − θ) · 1(T = c)] = 0; with the sample alone (λ = 0) its standard error is σ / √(n · share), so its
    width is 2 z σ / √(n · share). PPI++ tunes λ to the smallest variance, λ = 0 among the candidates, so the
    interval it prints is at most this wide (up to λ's estimation noise), and narrower the better the crowd's
    labels predict the expert's: the size rests on no crowd model, as the interval does."""
    from statistics import NormalDist

    if not (math.isfinite(width) and width > 0):
        raise ValueError(f"the target width must be a positive number, got {width!r}")
    if not 0 < share <= 1:
        raise ValueError(f"the class's share must be in (0, 1], got {share}")
    if not (math.isfinite(sd) and sd >= 0):
        raise ValueError(f"the standard deviation must be a non-negative number, got {sd!r}")
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    ratio = 2 * z * sd / width
    if ratio > 1e9:  # beyond any batch (and ratio² would overflow a float), as power.normal_sample_size
        return 10**18
    return math.ceil(ratio**2 / share - 1e-9)


def audit_hours(size: int, seconds_per_label: float) -> float:
    """The researcher's time to label ``size`` audited queries at ``seconds_per_label`` each, in hours."""
    if not (math.isfinite(seconds_per_label) and seconds_per_label > 0):
        raise ValueError(f"the seconds per label must be a positive number, got {seconds_per_label!r}")
    return size * seconds_per_label / 3600

"""A study plan's inputs: the pilot's paired differences, and the non-gendered share of a pool with its interval.

Pure. The plan (``metrics.services.planning``) reads a pilot's per-query values and a pool's labels; the
arithmetic on them is here, beside :mod:`genderbias.stats.power`, including the expert audit a batch needs for
a target width (issue 81; the smallest audit worth drawing: ``genderbias.crowd.audit_size.suggested_audit_size``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from genderbias.ranking.defaults import LEVEL

__all__ = [
    "SIGIR2020_NON_GENDERED", "audit_hours", "audit_size_for_width", "label_width_factor", "paired_differences",
    "pilot_moments", "pooled_to_annotate", "share_interval", "tested_difference",
]  # fmt: skip

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
    """r: the combined interval's width over the query-only one for paired differences of a report on a batch's
    labels (median over the rows given; None where no row has both). Such a report's test is, to first order,
    the paired t-test at Δ/r, needing about r² times the queries; the plan sizes that test."""
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
    """Audited queries for a ``level`` interval of full width ``width`` of a class mean (or a paired difference of
    two runs' means over the class): ⌈(2 z σ / w)² / share⌉, σ the values' sd within the class, ``share`` the
    class's share of the batch.

    The audit-based interval (PPI++, :mod:`genderbias.machine.proportions`) with the sample alone (λ = 0) has
    width 2 z σ / √(n · share); PPI++ tunes λ to the smallest variance, so the interval it prints is at most this
    wide (up to λ's noise): the size rests on no crowd model, as the interval does."""
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

"""Routing a batch on machine confidence: queries at or above a threshold t keep their machine label, the others
go to annotators as far as the budget allows.

Pure numpy. The guarantee is :func:`genderbias.machine.certification.certify_threshold` (the default rule).
The point estimate (:func:`choose_threshold`) is kept for comparison only, labelled "no guarantee": the lowest t
whose weighted estimate p̂_t (or its Wilson bound) meets the target selects the luckiest estimate, so its
accepted set falls short far more often than any stated risk.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

import numpy as np

from genderbias.stats.intervals import wilson_interval

__all__ = ["TOLERANCE", "RoutingSplit", "accuracy_at", "choose_threshold", "split_by_threshold", "tied"]

#: Slack when comparing an estimate with the target (float rounding, not statistics).
TOLERANCE = 1e-12
#: Confidences are compared at this many decimals: two that differ only by float rounding (12/16
#: computed two ways, a log-probability's exp) are one tie, which a threshold never splits.
CONFIDENCE_DECIMALS = 9


def tied(confidence) -> np.ndarray:
    """Confidences as every threshold compares them, rounded to :data:`CONFIDENCE_DECIMALS`: queries of one
    confidence are accepted or refused together, a tie never split by float noise or an arbitrary order."""
    return np.round(np.asarray(confidence, dtype=float), CONFIDENCE_DECIMALS)


@dataclass(frozen=True)
class ThresholdChoice:
    threshold: float | None  #: lowest confidence accepted; None: no threshold meets the target
    estimated_accuracy: float | None  #: of the machine-accepted queries (weighted ratio estimate)
    ci: tuple[float, float] | None  #: Wilson interval with Kish effective n
    sample_accepted: int  #: sample items with confidence >= threshold
    target: float
    conservative: bool
    candidates: list[dict]  #: threshold, estimated_accuracy, ci, sample_accepted, meets; descending threshold


@dataclass(frozen=True)
class RoutingSplit:
    accepted: list[str]  #: qids whose machine label is accepted (confidence >= threshold), by qid
    to_humans: list[str]  #: below the threshold, within budget, lowest confidence first
    over_budget: list[str]  #: below the threshold but not affordable, lowest confidence first


def _arrays(confidence, correct, weights) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Confidence, correctness (0/1) and weights as arrays, or ValueError saying what is wrong."""
    c = tied(confidence)
    ok = np.asarray(correct)
    lengths = {"confidence": len(c), "correct": len(ok)}
    if weights is not None:
        lengths["weights"] = len(weights)
    if len(set(lengths.values())) > 1:
        raise ValueError(f"lengths differ: {lengths}")
    if not np.all((c >= 0) & (c <= 1)):
        raise ValueError("confidences must be in [0, 1]")
    if not np.all((ok == 0) | (ok == 1)):
        raise ValueError("correct must be booleans (or 0/1)")
    w = np.ones(len(c)) if weights is None else np.asarray(weights, dtype=float)
    if not np.all(np.isfinite(w) & (w > 0)):
        raise ValueError("weights must be positive and finite")
    return c, ok.astype(float), w


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha}")


def _at_thresholds(c: np.ndarray, ok: np.ndarray, w: np.ndarray, thresholds: np.ndarray, alpha: float):
    """Per threshold: accepted count, p̂ and the Wilson bounds, from one pass of cumulative sums."""
    order = np.argsort(-c, kind="stable")
    cum_w = np.concatenate(([0.0], np.cumsum(w[order])))
    cum_wc = np.concatenate(([0.0], np.cumsum((w * ok)[order])))
    cum_w2 = np.concatenate(([0.0], np.cumsum((w**2)[order])))
    accepted = len(c) - np.searchsorted(np.sort(c), thresholds, side="left")
    with np.errstate(divide="ignore", invalid="ignore"):
        estimate = cum_wc[accepted] / cum_w[accepted]
        n_eff = cum_w[accepted] ** 2 / cum_w2[accepted]
        low, high = wilson_interval(estimate, n_eff, level=1 - alpha)
    return accepted, estimate, low, high


def accuracy_at(
    confidence: Sequence[float],
    correct: Sequence[bool],
    weights: Sequence[float] | None,
    threshold: float,
    *,
    alpha: float = 0.05,
) -> tuple[float | None, tuple[float, float] | None, int]:
    """``(estimate, interval, accepted sample items)`` of the items with confidence >= threshold: Σw·c / Σw and a
    Wilson interval at level 1 − alpha at the Kish effective size (Σw)² / Σw², since unequal weights make an
    estimate noisier than its count suggests. ``(None, None, 0)`` when no item is at or above the threshold.
    """
    _check_alpha(alpha)
    c, ok, w = _arrays(confidence, correct, weights)
    accepted, estimate, low, high = _at_thresholds(c, ok, w, np.array([threshold], dtype=float), alpha)
    if accepted[0] == 0:
        return None, None, 0
    return float(estimate[0]), (float(low[0]), float(high[0])), int(accepted[0])


def choose_threshold(
    confidence: Sequence[float],
    correct: Sequence[bool],
    weights: Sequence[float] | None = None,
    *,
    target: float,
    conservative: bool = False,
    alpha: float = 0.05,
    min_accepted: int = 10,
) -> ThresholdChoice:
    """The LOWEST distinct sample confidence whose estimate (``conservative``: the CI's lower bound) is >= target
    (in (0, 1]) with at least ``min_accepted`` sample items at or above it (no choice on two or three lucky items).
    Lowest even if a higher one misses: what is estimated is the accuracy of everything accepted, not of a band.
    """
    if not 0 < target <= 1:
        raise ValueError(f"target must be in (0, 1], got {target}")
    if min_accepted < 0:
        raise ValueError(f"min_accepted must not be negative, got {min_accepted}")
    _check_alpha(alpha)
    c, ok, w = _arrays(confidence, correct, weights)
    if len(c) == 0:
        raise ValueError("no sample items: a threshold needs human-labelled items to be estimated from")
    thresholds = np.unique(c)[::-1]
    accepted, estimate, low, high = _at_thresholds(c, ok, w, thresholds, alpha)
    tested = low if conservative else estimate
    meets = (accepted >= min_accepted) & (tested >= target - TOLERANCE)
    candidates = [
        {
            "threshold": float(thresholds[i]),
            "estimated_accuracy": float(estimate[i]),
            "ci": (float(low[i]), float(high[i])),
            "sample_accepted": int(accepted[i]),
            "meets": bool(meets[i]),
        }
        for i in range(len(thresholds))
    ]
    chosen = np.flatnonzero(meets)
    best = candidates[chosen[-1]] if len(chosen) else None  # thresholds descend: the last that meets is the lowest
    keys = ("threshold", "estimated_accuracy", "ci", "sample_accepted")
    figures = (None, None, None, 0) if best is None else tuple(best[key] for key in keys)
    return ThresholdChoice(*figures, target, conservative, candidates)


def _affordable(cost_per_query: Decimal | None, budget: Decimal | None) -> int | None:
    """floor(budget / cost_per_query), or None without a budget (no limit)."""
    if budget is None:
        return None
    if cost_per_query is None:
        raise ValueError("a budget needs cost_per_query")
    if cost_per_query <= 0:
        raise ValueError(f"cost_per_query must be positive, got {cost_per_query}")
    if budget < 0:
        raise ValueError(f"budget must not be negative, got {budget}")
    return int(Decimal(budget) // Decimal(cost_per_query))  # both positive: // is the floor


def split_by_threshold(
    confidence: Mapping[str, float],
    threshold: float | None,
    *,
    exclude: Collection[str] = (),
    cost_per_query: Decimal | None = None,
    budget: Decimal | None = None,
) -> RoutingSplit:
    """The batch's qid -> confidence split at ``threshold`` (None: nothing accepted), ``exclude`` (already labelled)
    going nowhere; a budget sends people the lowest confidences first (ties by qid), the likeliest wrong labels.
    """
    affordable = _affordable(cost_per_query, budget)
    excluded = set(exclude)
    values = {qid: float(value) for qid, value in confidence.items() if qid not in excluded}
    if not all(0 <= value <= 1 for value in values.values()):
        raise ValueError("confidences must be in [0, 1]")
    values = dict(zip(values, tied(list(values.values())).tolist(), strict=True)) if values else values
    at = None if threshold is None else float(tied(threshold))
    accepted = sorted(qid for qid, value in values.items() if at is not None and value >= at)
    taken = set(accepted)
    below = sorted((qid for qid in values if qid not in taken), key=lambda qid: (values[qid], qid))
    if affordable is None:
        return RoutingSplit(accepted, below, [])
    return RoutingSplit(accepted, below[:affordable], below[affordable:])

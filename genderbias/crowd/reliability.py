"""Against the crowd, against the truth: what the crowd's own reliability says about a machine.

The calibration report's accuracy (and routing's promise) is agreement with the crowd's majority; the crowd errs
too, and no machine can agree with it more often than its noise allows. From a gold-seeded Dawid–Skene fit of the
calibration sample's votes with the machine one more annotator (:mod:`.denoised`): the de-noised accuracy, the
class shares, the crowd's vote (:func:`crowd_vote`, real items only: the gold answers kept passed the gold check,
right by selection), the k-vote majority's outcomes (:func:`majority_outcomes`), the ceiling, the crowd's
self-agreement and accuracy and the expected agreement, each defined in docs/prelabelling.md, "Against the crowd,
against the truth".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from typing import Any

import numpy as np

from genderbias.crowd.denoised import denoised_fit, refitted_interval
from genderbias.crowd.resampling import RefitProgress
from genderbias.labels import LABELS

__all__ = ["crowd_reliability", "crowd_vote", "majority_figures", "majority_outcomes", "quality_sentence"]


@cache
def _compositions(k: int, size: int) -> np.ndarray:
    """Every vector of ``size`` non-negative counts summing to ``k`` (``[outcomes × size]``)."""
    if size == 1:
        return np.array([[k]])
    rows = [np.hstack([np.full((len(rest), 1), first), rest]) for first in range(k, -1, -1)
            for rest in [_compositions(k - first, size - 1)]]  # fmt: skip
    return np.vstack(rows)


def majority_outcomes(vote: np.ndarray, k: int) -> np.ndarray:
    """``[T × (L + 1)]``: P(a strict plurality of ``k`` independent votes from row t of ``vote`` ``[T × L]``
    is each label), and P(tied) last; exact, over every count vector."""
    vote = np.asarray(vote, dtype=float)
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    size = vote.shape[1]
    counts = _compositions(k, size)  # [outcomes × L]
    log_coef = math.lgamma(k + 1) - np.array([sum(math.lgamma(c + 1) for c in row) for row in counts])
    with np.errstate(divide="ignore"):
        log_q = np.log(vote)  # [T × L]
    # log P(counts | t) = log coef + Σ_g c_g log q_t(g), with 0·log 0 = 0
    with np.errstate(invalid="ignore"):  # 0 * log 0: the unused branch
        terms = np.where(counts[None, :, :] > 0, counts[None, :, :] * log_q[:, None, :], 0.0)
    probability = np.exp(log_coef[None, :] + terms.sum(axis=2))  # [T × outcomes]
    top = counts.max(axis=1)
    tied = (counts == top[:, None]).sum(axis=1) > 1
    winner = np.zeros((len(counts), size + 1))
    winner[np.arange(len(counts)), np.where(tied, size, counts.argmax(axis=1))] = 1.0
    return probability @ winner


def crowd_vote(
    posteriors: np.ndarray, item_of_vote: np.ndarray, label_of_vote: np.ndarray, smoothing: float
) -> np.ndarray:
    """``[L × L]``: q_t(g) ∝ Σ_j p_{i(j)}(t)·1[g_j = g] + ``smoothing`` over the votes j (codes)."""
    size = posteriors.shape[1]
    counts = np.zeros((size, size))
    np.add.at(counts.T, label_of_vote, posteriors[item_of_vote])  # counts[t, g] += p_i(t)
    counts += smoothing
    return counts / counts.sum(axis=1, keepdims=True)


@dataclass
class CrowdReliability:
    """See the module docstring for every figure; ``None`` where a denominator is 0."""

    accuracy_true: float
    accuracy_true_ci: tuple[float, float]
    ceiling: float | None
    self_agreement: float | None
    crowd_accuracy: float | None
    disputed: float
    expected_agreement: float | None
    votes_per_query: int
    items: int
    gold: int  #: gold items (answers to gold questions) that seeded the fit
    class_shares: dict[str, float]
    vote: dict[str, dict[str, float]]  #: true label -> given label -> probability
    #: The fit's :func:`.label_probabilities.crowd_quality`: a warning says the interval may be too narrow.
    quality: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: tuples as lists, NaN as None."""
        values = asdict(self)
        low, high = self.accuracy_true_ci
        values["accuracy_true_ci"] = [None if math.isnan(low) else low, None if math.isnan(high) else high]
        return values


def _ratio(numerator: float, denominator: float) -> float | None:
    return float(numerator / denominator) if denominator > 0 else None


def majority_figures(shares: np.ndarray, vote: np.ndarray, k: int) -> dict[str, float | None]:
    """Ceiling, self-agreement, crowd accuracy and disputed share (module docstring) for ``k`` votes."""
    outcome = majority_outcomes(vote, k)
    size = len(shares)
    labelled = outcome[:, :size].sum(axis=1)  # d_t
    right = np.diag(outcome[:, :size])
    best = outcome[:, :size].max(axis=1)  # = P(M_k = t | t) when the crowd is better than chance on t
    return {
        "ceiling": _ratio(float(shares @ best), float(shares @ labelled)),
        "self_agreement": _ratio(float(shares @ (outcome[:, :size] ** 2).sum(axis=1)), float(shares @ labelled**2)),
        "crowd_accuracy": _ratio(float(shares @ right), float(shares @ labelled)),
        "disputed": float(shares @ outcome[:, size]),
    }


def crowd_reliability(
    judgments: Any,
    machine: Mapping[str, str],
    weights: Mapping[str, float],
    strata: Mapping[str, str],
    *,
    votes_per_query: int,
    gold: Mapping[str, str] | None = None,
    labels: Sequence[str] = LABELS,
    bootstrap: int = 2000,
    seed: int = 0,
    alpha: float = 0.05,
    progress: RefitProgress | None = None,
) -> CrowdReliability:
    """The figures of the module docstring, from one Dawid–Skene fit.

    ``judgments``: the votes (item, worker, label), gold questions included (``gold``: their labels).
    ``machine``, ``weights``, ``strata``: each sample item's machine label, stratum weight and stratum
    (items without a crowd vote are not assessed). ``votes_per_query``: k for a routed query.
    ``progress``: told ``(refitted, bootstrap)`` as the interval's refits go.
    """
    from genderbias.crowd.aggregation import DS_SMOOTHING
    from genderbias.crowd.label_probabilities import crowd_quality

    fitted = denoised_fit(judgments, machine, weights, strata, gold=gold, labels=labels)
    ds, items, m, w, accuracy = fitted.ds, fitted.items, fitted.machine, fitted.weights, fitted.accuracy
    index = {label: code for code, label in enumerate(labels)}
    posteriors = ds.posteriors.loc[items, list(labels)].to_numpy(dtype=float)
    quality = crowd_quality(ds)
    interval = refitted_interval(
        fitted,
        bootstrap=bootstrap,
        seed=seed,
        alpha=alpha,
        quality=quality,
        progress=progress,
    )
    shares = (w[:, None] * posteriors).sum(axis=0) / w.sum()
    row = {item: r for r, item in enumerate(ds.posteriors.index)}
    # Real items only: the gold answers kept passed the gold check (module docstring).
    real = judgments[~judgments["item"].astype(str).isin(set(gold or {}))]
    item_of_vote = np.array([row[str(item)] for item in real["item"]], dtype=np.int64)
    label_of_vote = np.array([index[label] for label in real["label"]], dtype=np.int64)
    vote = crowd_vote(ds.posteriors.to_numpy(dtype=float), item_of_vote, label_of_vote, DS_SMOOTHING)
    figures = majority_figures(shares, vote, votes_per_query)
    outcome = majority_outcomes(vote, votes_per_query)
    size = len(labels)
    labelled = outcome[:, :size].sum(axis=1)
    # A ratio of weighted sums, like the ceiling: Σ w·P(M = m, defined) / Σ w·P(defined).
    hits = (posteriors * outcome[:, :size][:, m].T).sum(axis=1)
    defined = posteriors @ labelled
    expected = _ratio(float((w * hits).sum()), float((w * defined).sum()))
    return CrowdReliability(
        accuracy_true=accuracy,
        accuracy_true_ci=interval,
        ceiling=figures["ceiling"],
        self_agreement=figures["self_agreement"],
        crowd_accuracy=figures["crowd_accuracy"],
        disputed=figures["disputed"],
        expected_agreement=expected,
        votes_per_query=int(votes_per_query),
        items=len(items),
        gold=len(gold or {}),
        class_shares={label: float(shares[t]) for t, label in enumerate(labels)},
        vote={t: {g: float(vote[a, b]) for b, g in enumerate(labels)} for a, t in enumerate(labels)},
        quality=quality,
    )


#: What each reason of the crowd-quality warning means for the de-noised accuracy, in a phrase.
QUALITY_REASONS = {
    "information": "the crowd's answers carry little information about the true label",
    "misfit": "the crowd model does not fit the answers (answers to a query not independent given its label)",
    "sparse": "most answers come from workers with few answers, whose reliability is estimated from too few",
    "selected": "the labels are a selection of the crowd's work (answers discarded after failed gold)",
}


def quality_sentence(quality: Mapping[str, Any] | None) -> str:
    """The de-noised accuracy's crowd-quality check in one sentence (calibration command and page)."""
    if not quality or quality.get("information") is None:
        return "crowd model not checked: no answers"
    if quality["warning"]:
        why = "; ".join(QUALITY_REASONS.get(reason, reason) for reason in quality["reasons"])
        return f"WARNING: the de-noised accuracy's interval may be too narrow: {why}"
    return (
        f"crowd model check passed ({quality['information']:.2f} bits per answer, misfit z = "
        f"{quality['misfit']:.1f}, {quality['sparse']:.0%} of the answers from workers with few answers)"
    )

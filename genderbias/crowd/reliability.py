"""Against the crowd, against the truth: what the crowd's own reliability says about a machine.

Pure numpy (pandas for the fit), no Django. The calibration report's accuracy is agreement with the crowd's
majority, and routing's promise is stated against it: the label the crowd would give a
routed query. The crowd is wrong too, so that accuracy is not the machine's accuracy
against the true label, and no machine can agree with the crowd more often than the
crowd's own noise allows. This module estimates both from a Dawid–Skene fit
(:func:`genderbias.crowd.aggregation.dawid_skene`, seeded with the gold questions) of the
calibration sample's votes. The model: each query has a true label T; each vote on it is
drawn independently given T.

For sample items i with machine label m_i, stratum weight w_i (N_s / n_s, as the other
figures), Dawid–Skene posterior p_i(t) = P(T_i = t | votes, machine label) and W = Σ_i w_i
(the machine is one more annotator of the fit, with a confusion matrix of its own: a
posterior from the votes alone would bias A_true down for any machine that knows
something the votes do not, since E[P(T = m | votes)] = P(T = m) only when m tells nothing
about T beyond the votes; the model assumes the machine's errors independent of the
crowd's given the true label, so errors shared on hard queries bias A_true up):

- **de-noised accuracy**: :mod:`genderbias.crowd.denoised`.
- **class shares** π_t = Σ_i w_i·p_i(t) / W: the batch's true-label distribution.
- **the crowd's vote** q_t(g) = Σ_j p_{i(j)}(t)·1[g_j = g] / Σ_j p_{i(j)}(t) over the votes j
  on the sample's real items (plus :data:`~genderbias.crowd.aggregation.DS_SMOOTHING` per cell): how a
  vote drawn from this crowd answers a query of true label t (the workers pooled as they shared
  the work). Gold answers seed the fit but are not pooled: the ones kept come from assignments
  that passed the gold check, right by selection, and would bias the ceiling up.
- **the majority of k votes** M_k: k independent votes from q_t, the strict plurality
  label, else disputed (no label), as :func:`~genderbias.crowd.aggregation.majority_vote`. By
  enumerating the multinomial outcomes: P(M_k = l | t) and d_t = P(M_k defined | t).
- **ceiling** Σ_t π_t·max_l P(M_k = l | t) / Σ_t π_t·d_t: the best accuracy against the
  crowd any machine can expect, among queries the crowd labels. Under the model a vote
  depends on the query only through T, so the best a machine can do is name, for each
  true label, the crowd's likeliest majority: the truth itself when the crowd is better
  than chance on it (then the ceiling is the agreement of an always-right machine). A
  target above the ceiling cannot be met however good the machine is.
- **crowd self-agreement** Σ_t π_t·Σ_l P(M_k = l | t)² / Σ_t π_t·d_t²: how often a second,
  independent crowd majority gives the same label as the first (both defined). Usually
  below the ceiling: two noisy majorities disagree more often than one and the truth do.
- **crowd accuracy** Σ_t π_t·P(M_k = t | t) / Σ_t π_t·d_t: how often the crowd majority is
  the true label (equal to the ceiling when the crowd is better than chance on every
  label); **disputed** Σ_t π_t·(1 − d_t), the share the crowd leaves without a label.
- **expected agreement** Σ_i w_i Σ_t p_i(t)·P(M_k = m_i | t) / Σ_i w_i Σ_t p_i(t)·d_t: the
  accuracy against the crowd that the model predicts for this machine, among the queries the
  crowd labels (a ratio of weighted sums, like the ceiling); near the measured accuracy when
  the model fits.
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


@cache
def _compositions(k: int, size: int) -> np.ndarray:
    """Every vector of ``size`` non-negative counts summing to ``k`` (``[outcomes × size]``)."""
    if size == 1:
        return np.array([[k]])
    rows = [np.hstack([np.full((len(rest), 1), first), rest]) for first in range(k, -1, -1)
            for rest in [_compositions(k - first, size - 1)]]  # fmt: skip
    return np.vstack(rows)


def majority_outcomes(vote: np.ndarray, k: int) -> np.ndarray:
    """P(strict majority of ``k`` independent votes = each label), and P(disputed) last.

    ``vote``: ``[T × L]``, row t the vote distribution given true label t. Returns
    ``[T × (L + 1)]``: columns 0..L-1 the probability that label wins a strict plurality,
    column L that the top count is tied (no label). Exact: the sum over every count vector
    c of k!/Π c_g! · Π q_t(g)^c_g.
    """
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
    """``[L × L]``: row t the pooled distribution of a vote on a query of true label t.

    ``posteriors`` ``[items × L]``; each vote j is on item ``item_of_vote[j]`` with label
    ``label_of_vote[j]`` (codes). q_t(g) ∝ Σ_j p_{i(j)}(t)·1[g_j = g] + ``smoothing``.
    """
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
    #: The crowd-quality check of the fit the figures come from (the machine one of its annotators;
    #: :func:`genderbias.crowd.label_probabilities.crowd_quality`): its warning says the de-noised
    #: accuracy's interval may be too narrow, as it says of the label-corrected ones.
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
    """Ceiling, crowd self-agreement, crowd accuracy and disputed share for true-label shares
    ``shares`` ``[L]``, the crowd's vote ``vote`` ``[L × L]`` and ``k`` votes per query."""
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

    ``judgments``: the crowd's votes (a frame of item, worker, label), gold questions
    included; ``gold`` maps those to their known labels (they seed the fit). ``machine``,
    ``weights`` and ``strata`` map each sample item to assess to its machine label,
    stratum weight and stratum; only items with at least one crowd vote are assessed.
    ``votes_per_query``: k, the votes the crowd gives a routed query.

    The machine is one more annotator of the fit (on the assessed items), so the
    posteriors are P(T | votes, machine label). Leaving it out would bias A_true down for
    any machine that knows something the votes do not: E[P(T = m | votes)] equals
    P(T = m) only when m tells nothing about T beyond the votes.

    ``progress``: told ``(refitted, bootstrap)`` as the interval's refits go (a job's page counts them).
    """
    from genderbias.crowd.aggregation import DS_SMOOTHING
    from genderbias.crowd.label_probabilities import crowd_quality

    fitted = denoised_fit(judgments, machine, weights, strata, gold=gold, labels=labels)
    ds, items, m, w, accuracy = fitted.ds, fitted.items, fitted.machine, fitted.weights, fitted.accuracy
    index = {label: code for code, label in enumerate(labels)}
    posteriors = ds.posteriors.loc[items, list(labels)].to_numpy(dtype=float)
    quality = crowd_quality(ds)
    interval = refitted_interval(
        ds,
        items,
        m,
        w,
        fitted.strata,
        accuracy,
        bootstrap=bootstrap,
        seed=seed,
        alpha=alpha,
        quality=quality,
        progress=progress,
    )
    shares = (w[:, None] * posteriors).sum(axis=0) / w.sum()
    row = {item: r for r, item in enumerate(ds.posteriors.index)}
    # The crowd's vote is pooled over the real items only: the gold answers kept are those of
    # assignments that passed the gold check (right by selection), so pooling them would make the
    # crowd look better than it is on the queries it labels (ceiling and self-agreement biased up).
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
    """The crowd-quality check of the de-noised accuracy's fit in one sentence (the calibration command and
    page): a warning with its reasons, or that the check passed with its figures."""
    if not quality or quality.get("information") is None:
        return "crowd model not checked: no answers"
    if quality["warning"]:
        why = "; ".join(QUALITY_REASONS.get(reason, reason) for reason in quality["reasons"])
        return f"WARNING: the de-noised accuracy's interval may be too narrow: {why}"
    return (
        f"crowd model check passed ({quality['information']:.2f} bits per answer, misfit z = "
        f"{quality['misfit']:.1f}, {quality['sparse']:.0%} of the answers from workers with few answers)"
    )

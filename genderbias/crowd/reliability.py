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

- **de-noised accuracy** A_true = Σ_i w_i·p_i(m_i) / W: the expected share of the batch's
  machine labels equal to the true label, p_i the *held-out* posterior (the model fitted on the
  other items, :func:`genderbias.crowd.crowd_model.held_out_posteriors`: the in-sample one is
  over-confident in each item's own majority). Every sampled item with a vote counts, disputed
  ones too (their posterior is as informative as any). Interval: bootstrap of the
  items within their strata with the crowd model *refitted in every draw*
  (:func:`refitted_interval`; the construction is every label-based interval's,
  :data:`genderbias.stats.intervals.LABEL_INTERVAL`, the percentile interval), so the uncertainty of the fitted confusion matrices and class
  shares is in it (holding the posteriors fixed left it out: the interval covered the truth in
  16–22% of simulated studies).
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

from genderbias.labels import LABELS
from genderbias.stats import intervals

#: Chunk size of the bootstrap's index matrices (cells), so memory stays bounded.
_BOOTSTRAP_CELLS = 2_000_000


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


def _stratified_bootstrap(
    values: np.ndarray, weights: np.ndarray, strata: np.ndarray, *, bootstrap: int, seed: int, alpha: float
) -> tuple[float, float]:
    """Percentile interval of Σ w·v / Σ w, resampling items with replacement within each stratum."""
    if bootstrap == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    groups = [np.flatnonzero(strata == s) for s in np.unique(strata)]
    n = len(values)
    estimates = np.empty(bootstrap)
    chunk = max(1, _BOOTSTRAP_CELLS // n)
    for start in range(0, bootstrap, chunk):
        rows = min(chunk, bootstrap - start)
        indices = np.hstack([group[rng.integers(0, len(group), size=(rows, len(group)))] for group in groups])
        w = weights[indices]
        estimates[start : start + rows] = (w * values[indices]).sum(axis=1) / w.sum(axis=1)
    low, high = np.quantile(estimates, [alpha / 2, 1 - alpha / 2])
    return (float(low), float(high))


def denoised_accuracy(
    posteriors: np.ndarray,
    machine: Sequence[int],
    weights: Sequence[float],
    strata: Sequence[Any],
    *,
    bootstrap: int = 2000,
    seed: int = 0,
    alpha: float = 0.05,
) -> tuple[float, tuple[float, float]]:
    """A_true = Σ_i w_i·p_i(m_i) / Σ_i w_i and its stratified percentile bootstrap interval.

    ``posteriors`` ``[n × L]`` rows aligned with the ``machine`` label codes, ``weights``
    and ``strata`` (the stratum each item was drawn from: resampled within).
    """
    p = np.asarray(posteriors, dtype=float)
    m = np.asarray(machine, dtype=np.int64)
    w = np.asarray(weights, dtype=float)
    s = np.asarray(strata)
    if not (len(p) == len(m) == len(w) == len(s)) or len(p) == 0:
        raise ValueError("posteriors, machine, weights and strata must be aligned and not empty")
    if not np.all(np.isfinite(w) & (w > 0)):
        raise ValueError("weights must be positive and finite")
    right = p[np.arange(len(m)), m]
    estimate = float((w * right).sum() / w.sum())
    return estimate, _stratified_bootstrap(right, w, s, bootstrap=bootstrap, seed=seed, alpha=alpha)


def refitted_draws(
    ds: Any,
    items: Sequence[str],
    machine: np.ndarray,
    weights: np.ndarray,
    strata: Sequence[Any],
    *,
    bootstrap: int,
    seed: int,
    jackknife: bool = False,
) -> tuple[np.ndarray, np.ndarray | None]:
    """A_true with the crowd model refitted in every bootstrap draw: ``(draws [B], jackknife [G] or None)``.

    The assessed ``items`` are resampled within their ``strata``; every other item of the fit
    (gold answers, sampled queries without a machine label) is resampled on its own. Each draw
    refits Dawid–Skene (:func:`genderbias.crowd.crowd_model.bootstrap_posteriors`) with those
    multiplicities and recomputes A_true on the draw: the estimation error of the workers'
    confusion matrices and of the class shares is in the interval, not only the items'.
    ``jackknife``: also refit with each block of :func:`genderbias.stats.intervals.jackknife_weights` of the
    assessed items left out (the other items kept once), for ``bca``'s acceleration.
    """
    from genderbias.crowd import crowd_model

    encoded = ds.encoded
    rng = np.random.default_rng(seed)
    row = {str(item): r for r, item in enumerate(encoded.items)}
    rows = np.array([row[item] for item in items], dtype=np.int64)
    strata = np.asarray(strata)
    multiplicity = np.zeros((bootstrap, encoded.n_items))
    for stratum in np.unique(strata):
        members = rows[strata == stratum]
        drawn = rng.multinomial(len(members), np.full(len(members), 1 / len(members)), bootstrap)
        multiplicity[:, members] = drawn
    others = np.setdiff1d(np.arange(encoded.n_items), rows)
    if len(others):
        multiplicity[:, others] = rng.multinomial(len(others), np.full(len(others), 1 / len(others)), bootstrap)
    if jackknife:
        blocks = intervals.jackknife_weights(len(rows))
        left_out = np.ones((len(blocks), encoded.n_items))
        left_out[:, rows] = blocks
        multiplicity = np.vstack([multiplicity, left_out])
    start = ds.posteriors.reindex(columns=list(encoded.labels)).to_numpy(dtype=np.float64)
    posteriors = crowd_model.bootstrap_posteriors(encoded, multiplicity, start)
    right = posteriors[:, rows, machine]  # [B (+ G) × assessed]
    w = multiplicity[:, rows] * weights[None, :]
    estimates = (w * right).sum(axis=1) / w.sum(axis=1)
    return estimates[:bootstrap], (estimates[bootstrap:] if jackknife else None)


def leave_out_estimates(
    ds: Any, items: Sequence[str], machine: np.ndarray, weights: np.ndarray, by: str, *, blocks: int | None = None
) -> np.ndarray:
    """A_true with the crowd model refitted without each group of a delete-a-group jackknife ``by``
    workers or by answers (``[G]``; :func:`genderbias.crowd.crowd_model.jackknife_groups`, the
    machine never left out, every assessed item kept once): what the workers' variance component
    (:func:`genderbias.stats.intervals.extra_variance`) is read from, which the items' bootstrap
    (:func:`refitted_draws`) does not see."""
    from genderbias.crowd import crowd_model

    encoded = ds.encoded
    row = {str(item): r for r, item in enumerate(encoded.items)}
    rows = np.array([row[item] for item in items], dtype=np.int64)
    start = ds.posteriors.reindex(columns=list(encoded.labels)).to_numpy(dtype=np.float64)
    groups = crowd_model.jackknife_groups(
        encoded, by, intervals.JACKKNIFE_BLOCKS if blocks is None else blocks, fixed=(MACHINE_WORKER,)
    )
    right = crowd_model.leave_out_posteriors(encoded, start, groups)[:, rows, machine]  # [G × assessed]
    return (right * weights[None, :]).sum(axis=1) / weights.sum()


#: The machine's worker id in the Dawid-Skene fit (no pseudonym can hold a NUL).
MACHINE_WORKER = "\0machine"


def denoised_bias(
    ds: Any,
    items: Sequence[str],
    machine: np.ndarray,
    weights: np.ndarray,
    *,
    seed: int = 0,
    quality: Mapping[str, Any] | None = None,
) -> float | None:
    """Where the crowd-quality check of the fit with the machine warns
    (:func:`genderbias.crowd.label_probabilities.crowd_quality`, any reason), A_true's bias as replicate
    crowds drawn from that fit show it (None where the check passes): the crowd's answers with the items'
    difficulty spread as the batch's show it (:func:`genderbias.crowd.crowd_model.difficulty_spread`), the
    machine's without it, each replicate refitted and its A_true (held-out posteriors at the replicate
    machine's labels) less the share of the machine's replicate labels that are right, averaged.
    ``quality``: the check's verdict on ``ds`` when already computed.

    Hard queries that the crowd answers alike and wrongly read as the machine's errors, so A_true comes out
    too low; a machine as troubled by hard queries as the crowd would show less of it, so where its errors
    follow the items' difficulty too the interval is the wider for it (docs/quality.md "Too sure, and by how
    much"). Measured on the simulated difficulty crowd (8 studies of 1,000 queries): −0.0159 (s.e. 0.0034)
    where the true error was −0.0186 (0.0031)."""
    from genderbias.crowd import crowd_model
    from genderbias.crowd.label_probabilities import crowd_quality

    if not (quality if quality is not None else crowd_quality(ds))["warning"]:
        return None
    encoded = ds.encoded
    posteriors, priors, confusion = ds.arrays()
    spread = crowd_model.difficulty_spread(encoded, posteriors, priors, confusion, seed=seed)
    exempt = np.flatnonzero(np.asarray(encoded.workers) == MACHINE_WORKER)
    truth, fits, answers = crowd_model.replicate_crowds(
        encoded, posteriors, confusion, spread, seed=seed, exempt=exempt
    )  # fmt: skip
    row = {str(item): r for r, item in enumerate(encoded.items)}
    rows = np.array([row[item] for item in items], dtype=np.int64)
    w = np.asarray(weights, dtype=np.float64)
    by_machine = np.isin(encoded.worker_idx, exempt)
    errors = []
    for r, (fitted, replicate) in enumerate(zip(fits, answers, strict=True)):
        said = np.full(encoded.n_items, -1, dtype=np.int64)
        said[encoded.item_idx[by_machine]] = replicate.label_idx[by_machine]
        m = said[rows]
        estimate = (w * fitted.held_out[0][rows, m]).sum() / w.sum()
        errors.append(estimate - (w * (m == truth[r, rows])).sum() / w.sum())
    return float(np.mean(errors))


def refitted_interval(
    ds: Any,
    items: Sequence[str],
    machine: np.ndarray,
    weights: np.ndarray,
    strata: Sequence[Any],
    estimate: float,
    *,
    bootstrap: int,
    seed: int,
    alpha: float,
    construction: str = intervals.LABEL_INTERVAL,
    quality: Mapping[str, Any] | None = None,
) -> tuple[float, float]:
    """The interval of A_true (``estimate``) from :func:`refitted_draws`, by ``construction``
    (:func:`genderbias.stats.intervals.bootstrap_interval`, the one choice of every label-based interval), joined
    with itself moved by :func:`denoised_bias` where the crowd-quality check warns
    (:func:`genderbias.stats.intervals.extended`; ``quality``: its verdict on ``ds`` when already computed)."""
    if bootstrap == 0:
        return (math.nan, math.nan)
    jackknife = intervals.needs_jackknife(construction)
    draws, jack = refitted_draws(
        ds, items, machine, weights, strata, bootstrap=bootstrap, seed=seed, jackknife=jackknife
    )
    accel = intervals.acceleration(jack) if jackknife else None
    extra = None
    if intervals.needs_workers(construction):
        extra = intervals.extra_variance(
            construction, lambda by: leave_out_estimates(ds, items, machine, weights, by)[:, None]
        )[0]
    low, high = intervals.bootstrap_interval(draws, estimate, 1.0 - alpha, construction, accel, extra=extra)
    bias = denoised_bias(ds, items, machine, weights, seed=seed, quality=quality)
    if bias is None:
        return low, high
    low, high = intervals.extended(np.array([low]), np.array([high]), np.array([bias]))
    return float(low[0]), float(high[0])


@dataclass(frozen=True)
class DenoisedFit:
    """The Dawid–Skene fit with the machine as one more annotator, the assessed items (with a crowd
    vote) and their machine label codes, weights and strata, and A_true from the held-out posteriors."""

    ds: Any
    items: list[str]
    machine: np.ndarray
    weights: np.ndarray
    strata: list[Any]
    accuracy: float


def denoised_fit(
    judgments: Any,
    machine: Mapping[str, str],
    weights: Mapping[str, float],
    strata: Mapping[str, str],
    *,
    gold: Mapping[str, str] | None = None,
    labels: Sequence[str] = LABELS,
) -> DenoisedFit:
    """What :func:`crowd_reliability` fits before its figures (arguments as it takes them); the
    crowd-coverage simulation reads the de-noised accuracy's draws from it
    (:func:`refitted_draws`)."""
    import pandas as pd

    from genderbias.crowd.aggregation import dawid_skene

    voted = set(judgments["item"].astype(str))
    items = [item for item in machine if item in voted]
    if not items:
        raise ValueError("no item to assess has a crowd vote")
    machine_rows = pd.DataFrame({"item": items, "worker": MACHINE_WORKER, "label": [machine[q] for q in items]})
    # Full rows (shrunk to one coin per worker, crowd_model.SHRINKAGE answers' worth): the machine answers
    # every query and errs in its own way, not along the crowd's pattern; read through a one-coin row its
    # errors looked like the crowd's and its accuracy came out 0.013 too low (tests/annotation/machine/
    # test_crowd_reliability.py, 20 redraws: full rows -0.007), and the held-out choice cannot see that
    # on a sample of a few hundred queries.
    ds = dawid_skene(pd.concat([judgments, machine_rows], ignore_index=True), labels, gold=gold, model="full")
    index = {label: code for code, label in enumerate(labels)}
    m = np.array([index[machine[item]] for item in items], dtype=np.int64)
    w = np.array([weights[item] for item in items], dtype=float)
    item_strata = [strata[item] for item in items]
    # A_true from the held-out posteriors (each item's under the model fitted on the others), as
    # every figure with an interval on the labels and as its refitted interval: the in-sample
    # posteriors are over-confident in each item's own majority.
    held_out = ds.held_out.loc[items, list(labels)].to_numpy(dtype=float)
    accuracy, _ = denoised_accuracy(held_out, m, w, item_strata, bootstrap=0)
    return DenoisedFit(ds, items, m, w, item_strata, accuracy)


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
    """
    from genderbias.crowd.aggregation import DS_SMOOTHING
    from genderbias.crowd.label_probabilities import crowd_quality

    fitted = denoised_fit(judgments, machine, weights, strata, gold=gold, labels=labels)
    ds, items, m, w, accuracy = fitted.ds, fitted.items, fitted.machine, fitted.weights, fitted.accuracy
    index = {label: code for code, label in enumerate(labels)}
    posteriors = ds.posteriors.loc[items, list(labels)].to_numpy(dtype=float)
    quality = crowd_quality(ds)
    interval = refitted_interval(
        ds, items, m, w, fitted.strata, accuracy, bootstrap=bootstrap, seed=seed, alpha=alpha, quality=quality
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


#: Permutations of :func:`shared_errors` when the arrangements are too many to enumerate.
SHARED_ERROR_DRAWS = 10_000


def shared_errors(
    answers: Sequence[tuple[str, str]],
    known: Mapping[str, str],
    machine: Mapping[str, str],
    *,
    draws: int = SHARED_ERROR_DRAWS,
    seed: int = 0,
) -> dict[str, Any]:
    """Does the crowd err more often on the gold questions the machine gets wrong? The de-noised
    accuracy's one assumption that no fit can check (the machine's and the crowd's errors independent
    given the true label), tested where the true label is known.

    ``answers``: the crowd's answers to gold questions (question, label), every answer (a worker meets a
    question in every HIT); ``known``: question → true label; ``machine``: question → the machine's label.
    Per question answered by the crowd and labelled by the machine, the share of the crowd's answers that
    are wrong; the statistic is the mean of those shares over the questions the machine got wrong. Under
    independence which questions the machine gets wrong is unrelated to how hard they are for the crowd,
    so its p (one-sided: shared errors make the crowd err *more* there) is the share of arrangements of the
    machine's wrong answers among the questions, within each true label, whose statistic is at least the
    observed one (every arrangement when at most ``draws`` of them; else ``draws`` random ones, seeded,
    p = (1 + those at least as large) / (draws + 1)).
    The question, not the answer, is the unit: a question hard for one worker is hard for the next.

    Returns ``questions``, ``machine_wrong`` (questions), ``crowd_error_machine_wrong`` and
    ``crowd_error_machine_right`` (mean shares), ``p`` and ``testable`` (False, with ``p`` None, when the
    machine got every question right, or every one wrong: nothing to compare)."""
    wrong: dict[str, list[int]] = {}
    for question, label in answers:
        if question in known and question in machine:
            wrong.setdefault(question, []).append(int(label != known[question]))
    questions = sorted(wrong)
    share = np.array([np.mean(wrong[q]) for q in questions])
    machine_wrong = np.array([machine[q] != known[q] for q in questions], dtype=bool)
    out: dict[str, Any] = {
        "questions": len(questions),
        "machine_wrong": int(machine_wrong.sum()),
        "crowd_error_machine_wrong": float(share[machine_wrong].mean()) if machine_wrong.any() else None,
        "crowd_error_machine_right": float(share[~machine_wrong].mean()) if (~machine_wrong).any() else None,
        "p": None,
        "testable": bool(machine_wrong.any() and (~machine_wrong).any()),
    }
    if not out["testable"]:
        return out
    strata = [np.flatnonzero([known[q] == t for q in questions]) for t in sorted({known[q] for q in questions})]
    counts = [int(machine_wrong[s].sum()) for s in strata]
    arrangements = math.prod(math.comb(len(s), c) for s, c in zip(strata, counts, strict=True))
    observed = share[machine_wrong].mean()
    if arrangements <= draws:
        from itertools import combinations, product

        sums = [
            [share[list(chosen)].sum() for chosen in combinations(s, c)] for s, c in zip(strata, counts, strict=True)
        ]
        totals = np.array([sum(parts) for parts in product(*sums)])
    else:
        rng = np.random.default_rng(seed)
        totals = np.zeros(draws)
        for s, c in zip(strata, counts, strict=True):
            if c:
                picks = np.argsort(rng.random((draws, len(s))), axis=1)[:, :c]
                totals += share[s][picks].sum(axis=1)
    at_least = int(np.sum(totals / machine_wrong.sum() >= observed - 1e-12))
    # Every arrangement: the exact p; random ones: the observed arrangement counted among them.
    out["p"] = at_least / len(totals) if arrangements <= draws else (1 + at_least) / (draws + 1)
    return out


def shared_errors_sentence(shared: Mapping[str, Any] | None) -> str:
    """:func:`shared_errors`' verdict in one sentence, beside the de-noised accuracy (the calibration
    command and page)."""
    if not shared or not shared["questions"]:
        return "assumption not tested: no gold question both answered by the crowd and labelled by the machine"
    said = f"assumption tested on {shared['questions']} gold question(s) labelled by the machine: "
    if not shared["testable"]:
        got = "right" if shared["machine_wrong"] == 0 else "wrong"
        return said + f"not testable, the machine got every one {got}"
    verdict = "the crowd erred more where the machine did" if shared["p"] <= 0.05 else "no sign of shared errors"
    return said + (
        f"the crowd wrong on {shared['crowd_error_machine_wrong']:.2f} of its answers to the "
        f"{shared['machine_wrong']} the machine got wrong, {shared['crowd_error_machine_right']:.2f} to the others "
        f"(permutation p = {shared['p']:.3f}, one-sided): {verdict}"
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

"""The machine's accuracy against the true label, de-noised through the crowd model (the machine one more annotator).

Pure numpy (pandas for the fit), no Django. The crowd's majority is wrong too, so agreement with it is
not the machine's accuracy against the truth. For sample items i with machine label m_i, stratum
weight w_i (N_s / n_s) and Dawid–Skene posterior p_i(t) = P(T_i = t | votes, machine label) of a fit in
which the machine is one more annotator (:func:`denoised_fit`; a posterior from the votes alone would
bias the figure down for any machine that knows something the votes do not; the model assumes the
machine's errors independent of the crowd's given the true label, so errors shared on hard queries bias
it up), W = Σ_i w_i:

- **de-noised accuracy** A_true = Σ_i w_i·p_i(m_i) / W: the expected share of the batch's
  machine labels equal to the true label, p_i the *held-out* posterior (the model fitted on the
  other items, :func:`genderbias.crowd.estimation.held_out_posteriors`: the in-sample one is
  over-confident in each item's own majority). Every sampled item with a vote counts, disputed
  ones too (their posterior is as informative as any). Interval: bootstrap of the
  items within their strata with the crowd model *refitted in every draw*
  (:func:`refitted_interval`; the construction is every label-based interval's,
  :data:`genderbias.stats.intervals.LABEL_INTERVAL`, the percentile interval), so the uncertainty of the fitted confusion matrices and class
  shares is in it (holding the posteriors fixed leaves it out).
  The measured coverage: docs/quality.md, "The crowd model".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from genderbias.crowd import calibration, resampling
from genderbias.crowd.simulation import replicates
from genderbias.labels import LABELS
from genderbias.stats import intervals

#: Chunk size of the bootstrap's index matrices (cells), so memory stays bounded.
_BOOTSTRAP_CELLS = 2_000_000


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
    progress: resampling.RefitProgress | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """A_true with the crowd model refitted in every bootstrap draw: ``(draws [B], jackknife [G] or None)``.

    The assessed ``items`` are resampled within their ``strata``; every other item of the fit
    (gold answers, sampled queries without a machine label) is resampled on its own. Each draw
    refits Dawid–Skene (:func:`genderbias.crowd.resampling.bootstrap_posteriors`) with those
    multiplicities and recomputes A_true on the draw: the estimation error of the workers'
    confusion matrices and of the class shares is in the interval, not only the items'.
    ``jackknife``: also refit with each block of :func:`genderbias.stats.intervals.jackknife_weights` of the
    assessed items left out (the other items kept once), for ``bca``'s acceleration. ``progress``:
    told the bootstrap draws refitted so far (:func:`genderbias.crowd.resampling.bootstrap_posteriors`).
    """

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
    refitted = None if progress is None else lambda done, total: progress(min(done, bootstrap), bootstrap)
    posteriors = resampling.bootstrap_posteriors(encoded, multiplicity, start, progress=refitted)
    right = posteriors[:, rows, machine]  # [B (+ G) × assessed]
    w = multiplicity[:, rows] * weights[None, :]
    estimates = (w * right).sum(axis=1) / w.sum(axis=1)
    return estimates[:bootstrap], (estimates[bootstrap:] if jackknife else None)


def leave_out_estimates(
    ds: Any, items: Sequence[str], machine: np.ndarray, weights: np.ndarray, by: str, *, blocks: int | None = None
) -> np.ndarray:
    """A_true with the crowd model refitted without each group of a delete-a-group jackknife ``by``
    workers or by answers (``[G]``; :func:`genderbias.crowd.resampling.jackknife_groups`, the
    machine never left out, every assessed item kept once): what the workers' variance component
    (:func:`genderbias.stats.intervals.extra_variance`) is read from, which the items' bootstrap
    (:func:`refitted_draws`) does not see."""

    encoded = ds.encoded
    row = {str(item): r for r, item in enumerate(encoded.items)}
    rows = np.array([row[item] for item in items], dtype=np.int64)
    start = ds.posteriors.reindex(columns=list(encoded.labels)).to_numpy(dtype=np.float64)
    groups = resampling.jackknife_groups(
        encoded, by, intervals.JACKKNIFE_BLOCKS if blocks is None else blocks, fixed=(MACHINE_WORKER,)
    )
    right = resampling.leave_out_posteriors(encoded, start, groups)[:, rows, machine]  # [G × assessed]
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
    difficulty spread as the batch's show it (:func:`genderbias.crowd.calibration.difficulty_spread`), the
    machine's without it, each replicate refitted and its A_true (held-out posteriors at the replicate
    machine's labels) less the share of the machine's replicate labels that are right, averaged.
    ``quality``: the check's verdict on ``ds`` when already computed.

    Hard queries that the crowd answers alike and wrongly read as the machine's errors, so A_true comes out
    too low; a machine as troubled by hard queries as the crowd would show less of it, so where its errors
    follow the items' difficulty too the interval is the wider for it (docs/quality.md "Too sure, and by how
    much", where the sized bias is set against the simulated crowds' true error)."""
    from genderbias.crowd.label_probabilities import crowd_quality

    if not (quality if quality is not None else crowd_quality(ds))["warning"]:
        return None
    encoded = ds.encoded
    posteriors, priors, confusion = ds.arrays()
    spread = calibration.difficulty_spread(encoded, posteriors, priors, confusion, seed=seed)
    exempt = np.flatnonzero(np.asarray(encoded.workers) == MACHINE_WORKER)
    truth, fits, answers = replicates.replicate_crowds(
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
    progress: resampling.RefitProgress | None = None,
) -> tuple[float, float]:
    """The interval of A_true (``estimate``) from :func:`refitted_draws`, by ``construction``
    (:func:`genderbias.stats.intervals.bootstrap_interval`, the one choice of every label-based interval), joined
    with itself moved by :func:`denoised_bias` where the crowd-quality check warns
    (:func:`genderbias.stats.intervals.extended`; ``quality``: its verdict on ``ds`` when already computed;
    ``progress``: as :func:`refitted_draws` takes it)."""
    if bootstrap == 0:
        return (math.nan, math.nan)
    jackknife = intervals.needs_jackknife(construction)
    draws, jack = refitted_draws(
        ds, items, machine, weights, strata, bootstrap=bootstrap, seed=seed, jackknife=jackknife, progress=progress
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
    # Full rows (shrunk to one coin per worker, estimation.SHRINKAGE answers' worth): the machine answers
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

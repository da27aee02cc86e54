"""The machine's accuracy against the true label, de-noised through the crowd model:
A_true = Σ_i w_i p_i(m_i) / Σ_i w_i over the sample items with a vote, the machine one more annotator of a
gold-seeded Dawid–Skene fit (:func:`denoised_fit`), p_i its *held-out* posteriors
(:func:`.estimation.held_out_posteriors`); its interval (:func:`refitted_interval`) refits the crowd model in every
draw. Defined and measured: docs/prelabelling.md, "Against the crowd, against the truth".
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

__all__ = [
    "denoised_accuracy", "denoised_bias", "denoised_fit", "interval_construction", "leave_out_estimates",
    "refitted_draws", "refitted_interval",
]  # fmt: skip

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
    """A_true and its stratified percentile bootstrap interval (``posteriors`` ``[n × L]`` aligned with the
    ``machine`` label codes, ``weights`` and ``strata``, the stratum each item was drawn from)."""
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


@dataclass(frozen=True)
class DenoisedFit:
    """The fit with the machine as an annotator, the assessed items (with a crowd vote), their machine
    label codes, weights, strata and A_true."""

    ds: Any
    items: list[str]
    machine: np.ndarray
    weights: np.ndarray
    strata: list[Any]
    accuracy: float

    @property
    def rows(self) -> np.ndarray:
        """The assessed items' rows in the fit."""
        row = {str(item): r for r, item in enumerate(self.ds.encoded.items)}
        return np.array([row[item] for item in self.items], dtype=np.int64)


def refitted_draws(
    fit: DenoisedFit,
    *,
    bootstrap: int,
    seed: int,
    jackknife: bool = False,
    progress: resampling.RefitProgress | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """A_true with the crowd model refitted in every bootstrap draw: ``(draws [B], jackknife [G] or None)``.

    The assessed items are resampled within their strata, the fit's other items (gold answers)
    on their own. ``jackknife``: also refit with each block of the assessed items left out (the others
    kept once), for ``bca``. ``progress``: told the draws refitted so far.
    """
    encoded, rows, strata = fit.ds.encoded, fit.rows, np.asarray(fit.strata)
    rng = np.random.default_rng(seed)
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
    start = fit.ds.posteriors.reindex(columns=list(encoded.labels)).to_numpy(dtype=np.float64)
    refitted = None if progress is None else lambda done, total: progress(min(done, bootstrap), bootstrap)
    posteriors = resampling.bootstrap_posteriors(encoded, multiplicity, start, progress=refitted)
    right = posteriors[:, rows, fit.machine]  # [B (+ G) × assessed]
    w = multiplicity[:, rows] * fit.weights[None, :]
    estimates = (w * right).sum(axis=1) / w.sum(axis=1)
    return estimates[:bootstrap], (estimates[bootstrap:] if jackknife else None)


def leave_out_estimates(fit: DenoisedFit, by: str, *, blocks: int | None = None) -> np.ndarray:
    """``[G]``: A_true refitted without each jackknife group ``by`` workers or answers (the machine never
    left out): the workers' variance component, which the items' bootstrap does not see."""
    encoded = fit.ds.encoded
    start = fit.ds.posteriors.reindex(columns=list(encoded.labels)).to_numpy(dtype=np.float64)
    groups = resampling.jackknife_groups(
        encoded, by, intervals.JACKKNIFE_BLOCKS if blocks is None else blocks, fixed=(MACHINE_WORKER,)
    )
    right = resampling.leave_out_posteriors(encoded, start, groups)[:, fit.rows, fit.machine]  # [G × assessed]
    return (right * fit.weights[None, :]).sum(axis=1) / fit.weights.sum()


#: The machine's worker id in the Dawid-Skene fit (no pseudonym can hold a NUL).
MACHINE_WORKER = "\0machine"


def denoised_bias(fit: DenoisedFit, *, seed: int = 0, quality: Mapping[str, Any] | None = None) -> float | None:
    """Where the crowd-quality check (``quality``, computed when not given) warns: A_true's bias as replicate
    crowds drawn from the fit show it (the crowd's answers with the batch's difficulty spread, the machine's
    without), their A_true less their true accuracy, averaged; else None.

    Hard queries the crowd answers alike and wrongly read as the machine's errors, so A_true comes out too
    low (docs/quality.md "Too sure, and by how much")."""
    from genderbias.crowd.label_probabilities import crowd_quality

    if not (quality if quality is not None else crowd_quality(fit.ds))["warning"]:
        return None
    encoded, rows, w = fit.ds.encoded, fit.rows, fit.weights
    posteriors, priors, confusion = fit.ds.arrays()
    spread = calibration.difficulty_spread(encoded, posteriors, priors, confusion, seed=seed)
    exempt = np.flatnonzero(np.asarray(encoded.workers) == MACHINE_WORKER)
    truth, fits, answers = replicates.replicate_crowds(
        encoded, posteriors, confusion, spread, seed=seed, exempt=exempt
    )  # fmt: skip
    by_machine = np.isin(encoded.worker_idx, exempt)
    errors = []
    for r, (fitted, replicate) in enumerate(zip(fits, answers, strict=True)):
        said = np.full(encoded.n_items, -1, dtype=np.int64)
        said[encoded.item_idx[by_machine]] = replicate.label_idx[by_machine]
        m = said[rows]
        estimate = (w * fitted.held_out[0][rows, m]).sum() / w.sum()
        errors.append(estimate - (w * (m == truth[r, rows])).sum() / w.sum())
    return float(np.mean(errors))


def interval_construction() -> str:
    """The construction of the de-noised accuracy's interval: the one :data:`genderbias.stats.intervals.LABEL_INTERVAL`
    takes where the crowd model is not trusted, as no check of errors shared by query is run on a fit with the
    machine."""
    return intervals.construction_for(trusted=False)


def refitted_interval(
    fit: DenoisedFit,
    *,
    bootstrap: int,
    seed: int,
    alpha: float,
    construction: str | None = None,
    quality: Mapping[str, Any] | None = None,
    progress: resampling.RefitProgress | None = None,
) -> tuple[float, float]:
    """The ``construction`` interval of ``fit``'s A_true from :func:`refitted_draws` (default:
    :func:`interval_construction`), joined with itself moved by :func:`denoised_bias` where the crowd-quality
    check warns."""
    if bootstrap == 0:
        return (math.nan, math.nan)
    construction = construction or interval_construction()
    jackknife = intervals.needs_jackknife(construction)
    draws, jack = refitted_draws(fit, bootstrap=bootstrap, seed=seed, jackknife=jackknife, progress=progress)
    accel = intervals.acceleration(jack) if jackknife else None
    extra = None
    if intervals.needs_workers(construction):
        extra = intervals.extra_variance(construction, lambda by: leave_out_estimates(fit, by)[:, None])[0]
    low, high = intervals.bootstrap_interval(draws, fit.accuracy, 1.0 - alpha, construction, accel, extra=extra)
    bias = denoised_bias(fit, seed=seed, quality=quality)
    if bias is None:
        return low, high
    low, high = intervals.extended(np.array([low]), np.array([high]), np.array([bias]))
    return float(low[0]), float(high[0])


def denoised_fit(
    judgments: Any,
    machine: Mapping[str, str],
    weights: Mapping[str, float],
    strata: Mapping[str, str],
    *,
    gold: Mapping[str, str] | None = None,
    labels: Sequence[str] = LABELS,
) -> DenoisedFit:
    """What :func:`.reliability.crowd_reliability` fits before its figures (arguments as it takes them)."""
    import pandas as pd

    from genderbias.crowd.aggregation import dawid_skene

    voted = set(judgments["item"].astype(str))
    items = [item for item in machine if item in voted]
    if not items:
        raise ValueError("no item to assess has a crowd vote")
    machine_rows = pd.DataFrame({"item": items, "worker": MACHINE_WORKER, "label": [machine[q] for q in items]})
    # Full rows: the machine errs its own way, not along the crowd's pattern (docs/metrics.md, "Held-out posteriors").
    ds = dawid_skene(pd.concat([judgments, machine_rows], ignore_index=True), labels, gold=gold, model="full")
    index = {label: code for code, label in enumerate(labels)}
    m = np.array([index[machine[item]] for item in items], dtype=np.int64)
    w = np.array([weights[item] for item in items], dtype=float)
    item_strata = [strata[item] for item in items]
    held_out = ds.held_out.loc[items, list(labels)].to_numpy(dtype=float)
    accuracy, _ = denoised_accuracy(held_out, m, w, item_strata, bootstrap=0)
    return DenoisedFit(ds, items, m, w, item_strata, accuracy)

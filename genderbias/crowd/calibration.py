"""How much too sure the crowd model's posteriors are: replicate crowds drawn from the fit and refitted show
how far the model sits from a truth it is not told (:meth:`.label_probabilities.LabelModel.recalibrated`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from genderbias.crowd.checks import gold_check, predictive_check
from genderbias.crowd.estimation import Encoded
from genderbias.crowd.simulation.replicates import replicate_crowds

__all__ = ["TEMPERATURES", "difficulty_spread", "posterior_temperature", "replicate_temperature", "tempered"]

#: Spreads σ :func:`difficulty_spread` tries: error odds × exp(σ·d), d ~ N(0, 1) per item (``Crowd.difficulty``).
SPREADS = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5)
#: Replicate crowds per spread, and for the bias at the chosen spread (:func:`.simulation.replicates.replicate_crowds`).
SPREAD_REPLICATES = 4


def _spread_statistic(encoded: Encoded, priors: np.ndarray, confusion: np.ndarray, seed: int) -> float:
    """What :func:`difficulty_spread` matches: :func:`gold_check`'s ``chi2`` with 3 usable gold questions, else
    :func:`predictive_check`'s excess of unanimous-or-split queries."""
    gold = gold_check(encoded, confusion)
    if gold["questions"] >= 3:
        return float(gold["chi2"])
    check = predictive_check(encoded, priors, confusion, replicates=50, seed=seed)["extreme"]
    return check["observed"] - check["expected"]


def difficulty_spread(
    encoded: Encoded,
    posteriors: np.ndarray,
    priors: np.ndarray,
    confusion: np.ndarray,
    *,
    spreads: Sequence[float] = SPREADS,
    replicates: int = SPREAD_REPLICATES,
    seed: int = 0,
) -> float:
    """How spread the items' difficulty must be for a crowd like this one to look as it does: per σ of
    ``spreads``, ``replicates`` crowds drawn from the fit on the batch's design, refitted and checked as the
    batch is (:func:`_spread_statistic`); σ where their mean reaches the batch's (interpolated; 0 at or below
    σ = 0's, the largest above all). Refitted because a fit absorbs part of the difficulty into its rows
    (accuracy: docs/quality.md, "Why the intervals miss on item difficulty")."""
    rng = np.random.default_rng(seed)
    observed = _spread_statistic(encoded, priors, confusion, seed)
    expected = []
    for spread in spreads:
        _, fits, refitted = replicate_crowds(encoded, posteriors, confusion, spread, replicates=replicates, rng=rng)
        statistics = [
            _spread_statistic(e, f.priors[0], f.confusion[0], seed) for e, f in zip(refitted, fits, strict=True)
        ]
        expected.append(float(np.mean(statistics)))
    expected = np.maximum.accumulate(np.asarray(expected))
    if observed <= expected[0]:
        return 0.0
    above = np.flatnonzero(expected >= observed)
    if not len(above):
        return float(spreads[-1])
    i = int(above[0])
    low, high = expected[i - 1], expected[i]
    share = (observed - low) / (high - low) if high > low else 1.0
    return float(spreads[i - 1] + share * (spreads[i] - spreads[i - 1]))


#: Bounds of :func:`posterior_temperature`: beyond them it is not a calibration but a model that says nothing.
TEMPERATURES = (0.5, 4.0)


def tempered(posteriors: np.ndarray, temperature: float) -> np.ndarray:
    """``posteriors`` [… × K] to the power 1/``temperature``, renormalised (T > 1 flattens); zeros stay 0."""
    logs = np.log(np.clip(np.asarray(posteriors, dtype=np.float64), 1e-300, None)) / temperature
    logs -= logs.max(axis=-1, keepdims=True)
    out = np.exp(logs) * (np.asarray(posteriors) > 0)
    return out / out.sum(axis=-1, keepdims=True)


def posterior_temperature(truth: np.ndarray, posteriors: np.ndarray) -> float:
    """The temperature (:func:`tempered`) under which ``posteriors`` [R × N × K] best predict ``truth`` [R × N]
    by mean log loss, within :data:`TEMPERATURES`: how much too sure (T > 1) a model is of labels it was not
    told. Temperature scaling (Guo et al. 2017): one parameter, fixed well by a few thousand replicate labels."""
    from scipy.optimize import minimize_scalar

    posteriors = np.asarray(posteriors, dtype=np.float64).reshape(-1, posteriors.shape[-1])
    truth = np.asarray(truth).reshape(-1)
    logs = np.log(np.clip(posteriors, 1e-300, None))

    def loss(log_t: float) -> float:
        scaled = logs / np.exp(log_t)
        peak = scaled.max(axis=1)
        norm = np.log(np.exp(scaled - peak[:, None]).sum(axis=1)) + peak
        return float(np.mean(norm - scaled[np.arange(len(truth)), truth]))

    low, high = np.log(TEMPERATURES[0]), np.log(TEMPERATURES[1])
    return float(np.exp(minimize_scalar(loss, bounds=(low, high), method="bounded", options={"xatol": 1e-4}).x))


def replicate_temperature(
    encoded: Encoded, posteriors: np.ndarray, priors: np.ndarray, confusion: np.ndarray, *, seed: int = 0
) -> tuple[float, float]:
    """``(temperature, spread)``: :func:`posterior_temperature` of the held-out posteriors on the non-gold items
    of replicate crowds drawn at the batch's :func:`difficulty_spread` (arguments as it takes them)."""
    spread = difficulty_spread(encoded, posteriors, priors, confusion, seed=seed)
    truth, fits, _ = replicate_crowds(encoded, posteriors, confusion, spread, seed=seed)
    refitted = np.stack([f.held_out[0] for f in fits])
    free = np.setdiff1d(np.arange(encoded.n_items), encoded.gold_rows)
    return posterior_temperature(truth[:, free], refitted[:, free]), spread

"""How much too sure the crowd model's posteriors are: the items' difficulty spread and a temperature.

Pure (numpy, scipy; no Django). Replicate crowds drawn from the fit
(:mod:`genderbias.crowd.simulation.replicates`) and refitted show how far the model sits from a
truth it is not told; :meth:`genderbias.crowd.label_probabilities.LabelModel.recalibrated` applies
the temperature they give to the batch's posteriors.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from genderbias.crowd.checks import gold_check, predictive_check
from genderbias.crowd.estimation import Encoded
from genderbias.crowd.simulation.replicates import refitted_replicates, replicate_crowds

#: Spreads σ of query difficulty :func:`difficulty_spread` tries: every answer's error odds on an item
#: × exp(σ·d), d ~ N(0, 1) per item (the simulation's ``Crowd.difficulty``, :mod:`genderbias.crowd.simulation.studies`).
SPREADS = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5)
#: Replicate crowds per spread, and for the bias at the chosen spread (:func:`replicate_crowds`).
SPREAD_REPLICATES = 4


def _spread_statistic(encoded: Encoded, priors: np.ndarray, confusion: np.ndarray, seed: int) -> float:
    """What :func:`difficulty_spread` matches: the gold questions' scatter (:func:`gold_check`'s ``chi2``)
    when at least 3 gold questions have 5 answers, else the unanimous-or-split queries beyond what the
    fitted model expects (:func:`predictive_check`'s ``extreme``)."""
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
    """How spread the items' difficulty must be for a crowd like this one to look as it does: for each σ
    of ``spreads``, ``replicates`` crowds drawn from the fit (true labels from its ``posteriors`` [N × K], the
    class shares ``priors`` [K], the batch's own (item, worker) pairs answered from its rows ``confusion`` [W × K × K] with every answer's error odds
    × exp(σ·d_i), d_i ~ N(0, 1) per item, gold questions too), each refitted and checked as the batch is
    (:func:`_spread_statistic`: the gold questions' scatter beyond the binomial, or without gold the excess
    of unanimous-or-split queries); σ where the replicates' mean statistic reaches the batch's (linear
    between the two spreads around it), 0 at or below σ = 0's, the largest σ above them all.

    The replicates are refitted because a fit absorbs part of the difficulty into its rows (workers look
    more extreme than they are). How close it comes to the simulated crowds' true spread: docs/quality.md,
    "Why the intervals miss on item difficulty"."""
    rng = np.random.default_rng(seed)
    observed = _spread_statistic(encoded, priors, confusion, seed)
    expected = []
    for spread in spreads:
        _, fits, refitted = refitted_replicates(encoded, posteriors, confusion, spread, replicates, rng)
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


#: Bounds of :func:`posterior_temperature`: sharper than half or flatter than four times is not a
#: calibration but a model that says nothing.
TEMPERATURES = (0.5, 4.0)


def tempered(posteriors: np.ndarray, temperature: float) -> np.ndarray:
    """``posteriors`` [… × K] raised to 1/``temperature`` and renormalised: T > 1 flattens them (less sure),
    T < 1 sharpens them; a label with probability 0 keeps it."""
    logs = np.log(np.clip(np.asarray(posteriors, dtype=np.float64), 1e-300, None)) / temperature
    logs -= logs.max(axis=-1, keepdims=True)
    out = np.exp(logs) * (np.asarray(posteriors) > 0)
    return out / out.sum(axis=-1, keepdims=True)


def posterior_temperature(truth: np.ndarray, posteriors: np.ndarray) -> float:
    """The temperature T (:func:`tempered`) under which ``posteriors`` [R × N × K] best predict the labels
    ``truth`` [R × N] (codes), by their mean log loss, within :data:`TEMPERATURES`: how much too sure
    (T > 1) or too unsure (T < 1) a model's posteriors are of labels it was not told.

    Read from replicate crowds (:func:`replicate_crowds`), it is the model's own miscalibration where
    the crowd is like the batch's; applied to the batch's posteriors it moves the label-corrected
    figures as far as that miscalibration does (:meth:`genderbias.crowd.label_probabilities.LabelModel.recalibrated`).
    Plain temperature scaling (Guo et al. 2017, "On calibration of modern neural networks"): one
    parameter, so a few thousand replicate labels fix it well."""
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
    """``(temperature, spread)``: how much too sure the fit's held-out posteriors are
    (:func:`posterior_temperature` over the non-gold items of :func:`replicate_crowds`' crowds, drawn
    at the spread of difficulty the batch's answers show, :func:`difficulty_spread`, 0 where they show
    none). Arguments as :func:`difficulty_spread` takes them."""
    spread = difficulty_spread(encoded, posteriors, priors, confusion, seed=seed)
    truth, fits, _ = replicate_crowds(encoded, posteriors, confusion, spread, seed=seed)
    refitted = np.stack([f.held_out[0] for f in fits])
    free = np.setdiff1d(np.arange(encoded.n_items), encoded.gold_rows)
    return posterior_temperature(truth[:, free], refitted[:, free]), spread

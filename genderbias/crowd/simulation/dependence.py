"""The label dependence check's replicate crowds: how far the truth would sit from the label-corrected mean
if the batch's crowd erred with ranking dependence D (defined in :mod:`.label_dependence`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

import numpy as np
import pandas as pd

from genderbias.crowd.class_means import class_means, label_map
from genderbias.crowd.label_dependence import answer_rates, dependent_fit
from genderbias.crowd.simulation.answers import pick, tilt_errors
from genderbias.ranking.defaults import DEFAULT_SEED

__all__ = ["dependence_simulation", "simulated_shift"]


def simulated_shift(
    answers: pd.DataFrame,
    gold: Mapping[str, str],
    confusion: Mapping[str, pd.DataFrame],
    probabilities: pd.DataFrame,
    z: np.ndarray,
    values: np.ndarray,
    dependence: float,
    refit: Callable[[pd.DataFrame], pd.DataFrame],
    draws: int = 4,
    seed: int = DEFAULT_SEED,
    fitted: list[str] | None = None,
) -> tuple[float | np.ndarray, float | np.ndarray]:
    """``(shift, its MC s.e.)``: the mean over ``draws`` paired replicate batches (same true labels, same
    uniforms) of the corrected mean of ``values`` when the crowd errs independently minus when it errs with D.

    The crowd is refitted as erring with D (:func:`dependent_fit`); each replicate draws true labels from that
    refit (rows of ``probabilities`` outside ``fitted`` as given) and answers the batch's own (item, worker)
    pairs from the refit's rows (``confusion`` for a worker it does not cover; gold answered untilted), as
    they are and tilted; ``refit`` (answers → probabilities) reads each. D = 0 gives 0. ``values`` ``[N]``
    gives floats, ``[N × C]`` arrays ``[C]``. Against studies with a known D it gets the sign and part of
    the size (docs/metrics.md).
    """
    matrix = np.asarray(values, dtype=np.float64)
    single = matrix.ndim == 1
    matrix = matrix[:, None] if single else matrix
    if dependence == 0:
        zero = np.zeros(matrix.shape[1])
        return (0.0, 0.0) if single else (zero, zero.copy())
    labels = list(probabilities.columns)
    position = {label: i for i, label in enumerate(labels)}
    row_of = {q: i for i, q in enumerate(probabilities.index.astype(str))}
    items = answers["item"].astype(str).map(row_of)
    is_query = items.notna().to_numpy()
    rows = items.fillna(0).to_numpy(dtype=np.int64)
    gold_truth = answers["item"].astype(str).map(gold).map(position).fillna(0).to_numpy(dtype=np.int64)
    z = np.asarray(z, dtype=np.float64)
    reading, rows_at_d = dependent_fit(answers, gold, probabilities, z, dependence, fitted)
    pi = reading.to_numpy(dtype=np.float64)
    rates = answer_rates(answers, {**confusion, **rows_at_d}, labels)  # answers × true label × answer
    every = np.arange(len(answers))
    truths = np.broadcast_to(np.arange(len(labels)), (len(answers), len(labels)))  # each row's true label
    tilted_rates = {
        tilt: tilt_errors(rates, truths, np.where(is_query, np.exp(d * z[rows]), 1.0)[:, None])
        for tilt, d in ((False, 0.0), (True, dependence))
    }
    rng = np.random.default_rng(seed)
    shifts = []
    for _ in range(draws):
        truth = pick(rng.random(len(pi)), pi)
        true_label = np.where(is_query, truth[rows], gold_truth)
        uniforms = rng.random(len(answers))  # shared by the two crowds: the replicates are paired
        corrected = []
        for tilt in (False, True):
            chances = tilted_rates[tilt][every, true_label]
            given = pick(uniforms, chances)
            refitted = refit(answers.assign(label=[labels[i] for i in given]))
            replicate = refitted.reindex(index=probabilities.index, columns=labels)
            t, weighted = label_map(replicate)  # the columns a report on this replicate batch would give its labels
            fitted_pi = replicate.to_numpy(dtype=np.float64)
            p, w = (np.ones((len(fitted_pi), 1)), fitted_pi @ t[:, 0]) if weighted else (fitted_pi @ t, None)
            corrected.append(class_means(p, matrix, row_weights=w)[0])
        shifts.append(corrected[0] - corrected[1])
    shifts = np.asarray(shifts)  # draws × C
    mean = shifts.mean(axis=0)
    se = shifts.std(axis=0, ddof=1) / np.sqrt(len(shifts)) if len(shifts) > 1 else np.full(len(mean), np.nan)
    return (float(mean[0]), float(se[0])) if single else (mean, se)


#: Replicate batches per dependence in the sensitivity check (each a refit of the crowd model, twice).
DEPENDENCE_REPLICATES = 4


def dependence_simulation(model, seed: int):
    """:func:`simulated_shift` for a :class:`.label_probabilities.LabelModel`'s crowd, each replicate refitted
    with the batch's own Dawid–Skene model (the form and strength its judgments chose); ``None`` without a crowd
    fit (the posterior tilt is used then)."""
    from genderbias.crowd import estimation

    crowd = model.crowd
    if crowd is None or crowd.encoded is None or not len(model.crowd_qids):
        return None
    encoded = crowd.encoded
    labels = list(encoded.labels)
    answers = pd.DataFrame(
        {
            "item": encoded.items[encoded.item_idx].astype(str),
            "worker": encoded.workers[encoded.worker_idx].astype(str),
            "label": np.asarray(labels, dtype=object)[encoded.label_idx],
        }
    )
    gold = {
        str(encoded.items[row]): labels[int(np.argmax(onehot))]
        for row, onehot in zip(encoded.gold_rows, encoded.gold_onehot, strict=True)
    }
    table = model.table
    rows = [q for q in model.crowd_qids if q in table.index]

    position = {label: i for i, label in enumerate(labels)}
    items = pd.Index(encoded.items.astype(str))

    def refit(redrawn: pd.DataFrame) -> pd.DataFrame:
        # The batch's own crowd model (its form and strength, as chosen on the batch), refitted on the replicate's
        # answers: ``redrawn`` holds ``answers``' rows in their order. Choosing again for each replicate would add
        # the choice's own noise to a paired difference, at most of the check's cost (docs/benchmarks.md).
        codes = redrawn["label"].map(position).to_numpy(dtype=np.int64)
        held_out = estimation.fit(replace(encoded, label_idx=codes)).held_out[0]
        out = table.copy()
        out.loc[rows] = (
            pd.DataFrame(held_out, index=items, columns=labels)
            .reindex(index=rows, columns=table.columns, fill_value=0.0)
            .to_numpy()
        )
        return out

    def simulate(z: np.ndarray, differences: np.ndarray, dependence: float) -> np.ndarray:
        shift, _ = simulated_shift(
            answers, gold, crowd.confusion, table, z, differences, dependence, refit,
            draws=DEPENDENCE_REPLICATES, seed=seed, fitted=rows,
        )  # fmt: skip
        return shift

    return simulate

"""Does the fitted crowd model describe the crowd? What each worker's answers say, and a predictive check.

Pure (numpy; no Django). Read by the crowd-quality check
(:func:`genderbias.crowd.label_probabilities.crowd_quality`) and by the difficulty spread
(:func:`genderbias.crowd.calibration.difficulty_spread`).
"""

from __future__ import annotations

import numpy as np

from genderbias.crowd.estimation import Encoded


def worker_accuracy(confusion: np.ndarray, priors: np.ndarray) -> np.ndarray:
    """Each worker's probability of answering the true label, Σ_t π_t θ_w(t, t) ([W])."""
    return np.einsum("t,wtt->w", priors, confusion)


def informativeness(confusion: np.ndarray, priors: np.ndarray) -> np.ndarray:
    """Each worker's mutual information between the true label and the answer, in bits ([W]):
    0 for a spammer or a lazy worker (the answer says nothing about the truth)."""
    joint = priors[:, None] * confusion  # [W × T × G]
    given = joint.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(joint > 0, joint * np.log2(joint / (priors[None, :, None] * given)), 0.0)
    return terms.sum(axis=(1, 2))


#: The statistics of :func:`predictive_check`: how many queries' votes all agree, how many split
#: with no two alike, and the two together (over the queries with at least three votes).
CHECKED = ("unanimous", "split", "extreme")


def predictive_check(
    encoded: Encoded, priors: np.ndarray, confusion: np.ndarray, *, replicates: int = 200, seed: int = 0
) -> dict[str, dict[str, float]]:
    """A posterior-predictive check of the fitted model (``priors`` [K], ``confusion`` [W × K × K]):
    ``replicates`` crowds are drawn from it on the same design (each non-gold query's true label from
    the class shares, each of its answers from its worker's row), and each statistic of
    :data:`CHECKED` of the real votes is set against its distribution over the replicates:
    ``observed``, ``expected``, ``sd`` and ``z`` = (observed − expected) / sd.

    The model takes a query's votes to be independent given its label: when they are not (some
    queries are harder for everyone, workers copy, a selection kept only some answers), the real
    crowd has more unanimous and more split queries than any crowd the model can draw, and the
    intervals built on its posteriors are too narrow."""
    rng = np.random.default_rng(seed)
    k = len(encoded.labels)
    free = np.ones(encoded.n_items, dtype=bool)
    free[encoded.gold_rows] = False
    on_free = free[encoded.item_idx]
    items, workers, given = encoded.item_idx[on_free], encoded.worker_idx[on_free], encoded.label_idx[on_free]
    votes = np.bincount(items, minlength=encoded.n_items)
    scored = free & (votes >= 3)

    def statistics(labels: np.ndarray) -> np.ndarray:  # labels [R × J] → [R × 2]
        r = labels.shape[0]
        counts = np.zeros((r, encoded.n_items, k))
        np.add.at(counts, (np.arange(r)[:, None], items[None, :], labels), 1.0)
        counts = counts[:, scored]
        top = counts.max(axis=2)
        total = votes[scored][None, :]
        unanimous, split = (top == total).sum(axis=1), (top == 1).sum(axis=1)
        return np.stack([unanimous, split, unanimous + split], axis=1).astype(np.float64)

    truth = rng.choice(k, size=(replicates, encoded.n_items), p=priors / priors.sum())
    rows = confusion[workers[None, :], truth[:, items], :]  # [R × J × K]
    drawn = (rng.random((replicates, len(items)))[:, :, None] > rows.cumsum(axis=2)).sum(axis=2)
    simulated = statistics(np.minimum(drawn, k - 1))
    observed = statistics(given[None, :])[0]
    expected, sd = simulated.mean(axis=0), simulated.std(axis=0, ddof=1)
    out = {
        name: {
            "observed": float(observed[s]),
            "expected": float(expected[s]),
            "sd": float(sd[s]),
            "z": float((observed[s] - expected[s]) / sd[s]) if sd[s] > 0 else 0.0,
        }
        for s, name in enumerate(CHECKED)
    }
    out["gold"] = gold_check(encoded, confusion)
    return out


def gold_check(encoded: Encoded, confusion: np.ndarray, min_answers: int = 5) -> dict[str, float]:
    """Do the gold questions differ in difficulty more than the model allows? Per gold question with
    at least ``min_answers`` answers, its right answers against the model's expectation Σ_j θ_wj(t, t)
    (variance Σ_j θ(1 − θ)); ``chi2`` = Σ (observed − expected)² / variance over the G questions, and
    ``z`` = (chi2 − G) / √(2G) (0 with fewer than 3 such questions). When some queries are harder for
    every worker, the gold questions are too, and their shares right scatter beyond the binomial."""
    on_gold = np.isin(encoded.item_idx, encoded.gold_rows)
    if not on_gold.any():
        return {"chi2": 0.0, "questions": 0, "z": 0.0}
    truth = np.full(encoded.n_items, -1)
    truth[encoded.gold_rows] = encoded.gold_onehot.argmax(axis=1)
    items, workers, given = encoded.item_idx[on_gold], encoded.worker_idx[on_gold], encoded.label_idx[on_gold]
    t = truth[items]
    right_p = confusion[workers, t, t]
    observed = np.bincount(items, (given == t).astype(np.float64), minlength=encoded.n_items)
    expected = np.bincount(items, right_p, minlength=encoded.n_items)
    variance = np.bincount(items, right_p * (1 - right_p), minlength=encoded.n_items)
    count = np.bincount(items, minlength=encoded.n_items)
    used = (count >= min_answers) & (variance > 0)
    questions = int(used.sum())
    if questions < 3:
        return {"chi2": 0.0, "questions": questions, "z": 0.0}
    chi2 = float((((observed - expected) ** 2)[used] / variance[used]).sum())
    return {"chi2": chi2, "questions": questions, "z": (chi2 - questions) / np.sqrt(2 * questions)}

"""Does the fitted crowd model describe the crowd? What each worker's answers say, and a predictive check."""

from __future__ import annotations

import numpy as np

from genderbias.crowd.estimation import Encoded

__all__ = ["gold_check", "informativeness", "predictive_check", "worker_accuracy"]


def worker_accuracy(confusion: np.ndarray, priors: np.ndarray) -> np.ndarray:
    """Each worker's probability of answering the true label, Σ_t π_t θ_w(t, t) ([W])."""
    return np.einsum("t,wtt->w", priors, confusion)


def informativeness(confusion: np.ndarray, priors: np.ndarray) -> np.ndarray:
    """Each worker's mutual information between true label and answer, in bits ([W]; 0 for a spammer)."""
    joint = priors[:, None] * confusion  # [W × T × G]
    given = joint.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(joint > 0, joint * np.log2(joint / (priors[None, :, None] * given)), 0.0)
    return terms.sum(axis=(1, 2))


#: :func:`predictive_check`'s statistics over queries of 3+ votes: all agree, no two alike, either.
CHECKED = ("unanimous", "split", "extreme")


def predictive_check(
    encoded: Encoded, priors: np.ndarray, confusion: np.ndarray, *, replicates: int = 200, seed: int = 0
) -> dict[str, dict[str, float]]:
    """A posterior-predictive check: each :data:`CHECKED` statistic of the real votes against ``replicates``
    crowds drawn from the fit on the same design (``observed``, ``expected``, ``sd``, ``z``), plus
    :func:`gold_check`. Votes not independent given the label (hard queries, copying, selection) give more
    unanimous and more split queries than the model can draw, and too narrow intervals."""
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
    """Do the gold questions differ in difficulty more than the model allows (then their right answers
    scatter beyond the binomial)? ``chi2`` of each question's right answers (``min_answers`` or more)
    against Σ_j θ_wj(t, t), and ``z`` = (chi2 − G) / √(2G) (0 with fewer than 3 questions)."""
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

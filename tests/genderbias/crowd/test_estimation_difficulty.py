"""The item-difficulty crowd model (GLAD, genderbias.crowd.difficulty): on a crowd drawn here from known
abilities and easiness it recovers their order and the labels, and on the same answers it gives crowd-kit's
GLAD's posteriors and easiness when told crowd-kit's settings (uniform class shares, errors spread evenly,
the log easiness's prior mean 1)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from scipy.stats import spearmanr

from genderbias.crowd.aggregators import GLAD
from genderbias.crowd.difficulty import fit_difficulty
from genderbias.crowd.model_choice import encode

LABELS = ("a", "b", "c")


def glad_crowd(rng, items=400, workers=30, votes=5, spread=1.0):
    """Answers drawn from GLAD itself: α_w ~ N(1.5, 0.7), β_i = e^b, b ~ N(0, spread), errors even."""
    truth = rng.integers(0, len(LABELS), items)
    alpha = rng.normal(1.5, 0.7, workers)
    easiness = np.exp(rng.normal(0.0, spread, items))
    rows = []
    for i in range(items):
        for w in rng.choice(workers, votes, replace=False):
            right = rng.random() < expit(alpha[w] * easiness[i])
            wrong = [c for c in range(len(LABELS)) if c != truth[i]]
            rows.append((f"q{i:04d}", f"w{w:03d}", LABELS[truth[i] if right else rng.choice(wrong)]))
    return pd.DataFrame(rows, columns=["item", "worker", "label"]), truth, alpha, easiness


def test_it_recovers_the_order_of_easiness_and_ability_and_the_labels():
    rng = np.random.default_rng(1)
    frame, truth, alpha, easiness = glad_crowd(rng)
    encoded = encode(frame, LABELS, {}, model="one-coin")  # items q0000… and workers w000… sorted as drawn
    fitted = fit_difficulty(encoded)
    assert fitted.converged
    # Estimated, not known: the order of the queries' easiness and of the workers' ability.
    assert spearmanr(fitted.easiness, easiness).statistic > 0.5
    assert spearmanr(fitted.alpha, alpha).statistic > 0.6
    right = (fitted.posteriors.argmax(axis=1) == truth).mean()
    # The Bayes rule with the true parameters bounds what any estimate gets right on these answers.
    assert right > 0.9
    # The hardest fifth of the queries by the truth is labelled worse than the easiest fifth.
    hard, easy = easiness < np.quantile(easiness, 0.2), easiness > np.quantile(easiness, 0.8)
    hits = fitted.posteriors.argmax(axis=1) == truth
    assert hits[hard].mean() < hits[easy].mean()


def test_it_gives_crowd_kits_glad_on_the_same_answers():
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    rng = np.random.default_rng(2)
    frame, *_ = glad_crowd(rng, items=200, workers=15)
    data = frame.rename(columns={"item": "task"})
    theirs = crowdkit.GLAD(n_iter=100).fit(data)
    ours = GLAD(pattern="even", priors=[1 / 3] * 3, easiness_mean=1.0, labels=LABELS).fit(data)
    probas = theirs.probas_.reindex(index=ours.probas_.index, columns=list(LABELS)).to_numpy()
    assert np.abs(ours.probas_.to_numpy() - probas).max() < 0.1
    assert np.median(np.abs(ours.probas_.to_numpy() - probas)) < 1e-3
    assert (ours.labels_ == theirs.labels_.reindex(ours.labels_.index)).mean() > 0.98
    betas = theirs.betas_.reindex(ours.betas_.index).to_numpy()
    assert np.corrcoef(ours.betas_.to_numpy(), betas)[0, 1] > 0.99
    assert ours.alphas_.to_numpy() == pytest.approx(theirs.alphas_.reindex(ours.alphas_.index).to_numpy(), abs=0.1)


def test_gold_keeps_its_label_and_an_unknown_pattern_is_refused():
    rng = np.random.default_rng(4)
    frame, truth, *_ = glad_crowd(rng, items=60, workers=10, votes=3)
    wrong = LABELS[(truth[0] + 1) % 3]
    fitted = GLAD(labels=LABELS).fit(frame.rename(columns={"item": "task"}), true_labels={"q0000": wrong})
    assert fitted.labels_["q0000"] == wrong
    assert fitted.probas_.loc["q0000", wrong] == 1.0
    with pytest.raises(ValueError, match="pattern 'uneven': expected one of crowd, even"):
        fit_difficulty(encode(frame, LABELS, {}, model="one-coin"), pattern="uneven")

"""Which crowd model a batch's judgments get: one coin per worker, or full confusion rows.

Pure (numpy, pandas; no Django). :func:`encode` codes a judgments frame and asks
:func:`choose_shrinkage` for the model (:data:`genderbias.crowd.estimation.MODELS`) unless told:
more parameters must earn their place by predicting the votes of queries they did not see, and
a sparse crowd (answers spread over many workers with few answers each) gets one coin per worker
without scoring.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from genderbias.crowd.estimation import (
    MODELS,
    ONE_COIN,
    SHRINKAGE,
    Encoded,
    ModelChoice,
    _e_step_items,
    _incidence,
    fit,
)

#: The full rows win when their held-out log likelihood beats the one-coin's by this many s.e.
CHOICE_SE = 2.0
#: Folds of the items in :func:`choose_shrinkage`.
FOLDS = 5
#: A worker with fewer answers than this has a reliability estimated from too few of them ...
MIN_WORKER_ANSWERS = 30
#: ... and when more than this share of the answers come from such workers (a sparse crowd), full rows
#: are not offered (:func:`choose_shrinkage`: one coin per worker) and the crowd-quality warning says the
#: intervals may be too narrow (:func:`genderbias.crowd.label_probabilities.crowd_quality`). On a
#: Prolific-like crowd the held-out choice would take the full rows in some studies and bias the
#: label-corrected value upwards: a row of 11–22 answers shrunk by :data:`SHRINKAGE` follows its worker's
#: own votes, and so the items' majorities (the measured shares and bias: docs/quality.md, "The crowd model").
MAX_SPARSE_SHARE = 0.3


def encode(frame, labels: Sequence[str], gold: Mapping[str, str], *, model: str = "auto") -> Encoded:
    """Codes of a validated judgments frame (``item, worker, label``; see
    :func:`genderbias.crowd.aggregation.validate_judgments`) and the rows of its gold items,
    with the model of :data:`MODELS` (``auto``: the one the judgments choose, :func:`choose_shrinkage`)."""
    import pandas as pd

    labels = tuple(labels)
    items, item_idx = np.unique(frame["item"].to_numpy(dtype=str), return_inverse=True)
    workers, worker_idx = np.unique(frame["worker"].to_numpy(dtype=str), return_inverse=True)
    label_idx = pd.Categorical(frame["label"], categories=list(labels)).codes.astype(np.int64)
    gold_rows = np.array([i for i, item in enumerate(items) if item in gold], dtype=np.int64)
    onehot = np.zeros((len(gold_rows), len(labels)))
    onehot[np.arange(len(gold_rows)), [labels.index(gold[items[i]]) for i in gold_rows]] = 1.0
    encoded = Encoded(items, workers, labels, item_idx, worker_idx, label_idx, gold_rows, onehot)
    if model != "auto":
        return replace(encoded, shrinkage=MODELS[model])
    if encoded.n_items == 0:
        return encoded
    choice = choose_shrinkage(encoded)
    return replace(encoded, shrinkage=choice.shrinkage, choice=choice)


def choose_shrinkage(encoded: Encoded, *, folds: int = FOLDS, seed: int = 0) -> ModelChoice:
    """One coin per worker or full rows (``Encoded.shrinkage``), by the held-out log likelihood of
    the queries' votes: the non-gold items are dealt into ``folds`` folds (seeded), each model is
    fitted ``folds`` times with one fold left out (gold always in), and each left-out item's votes
    are scored by log Σ_t π_t Π_j θ_w(t, g_ij) under the fit without it. The full rows are chosen
    when their total beats the one-coin's by more than :data:`CHOICE_SE` standard errors of the
    items' paired differences: more parameters must earn their place on queries they did not see.
    On a sparse crowd (more than :data:`MAX_SPARSE_SHARE` of the answers from workers with fewer than
    :data:`MIN_WORKER_ANSWERS`) the one coin is taken without scoring: there the full rows predicted
    held-out votes better in about half the studies yet biased the label-corrected value (the held-out
    likelihood scores the votes, not the class means built on the posteriors).

    On the demo's crowd (5 workers of accuracy 0.7 erring evenly, nearly every query non-gendered)
    the one coin wins and the full rows invent a class; on a crowd with a lazy worker, spammers and
    class-dependent errors, thousands of queries, the full rows win by tens of s.e.
    (docs/quality.md, "The crowd model")."""
    free = np.setdiff1d(np.arange(encoded.n_items), encoded.gold_rows)
    sparse = sparse_share(encoded)
    if len(free) < 2 * folds or sparse > MAX_SPARSE_SHARE:  # too few queries, or answers a worker: one coin
        return ModelChoice(ONE_COIN, 0.0, 0.0, 0.0, len(free), sparse)
    fold = np.full(encoded.n_items, -1, dtype=np.int64)
    fold[np.random.default_rng(seed).permutation(free)] = np.arange(len(free)) % folds
    weights = np.stack([(fold != f).astype(np.float64) for f in range(folds)])
    by_item, _ = _incidence(encoded)
    by_item_t = by_item.T.tocsr()
    scored = {}
    for shrinkage in (ONE_COIN, SHRINKAGE):
        fitted = fit(replace(encoded, shrinkage=shrinkage), weights, held_out=False)
        _, per_item = _e_step_items(fitted.priors, fitted.confusion, encoded, by_item_t)
        scored[shrinkage] = per_item[fold[free], free]
    difference = scored[SHRINKAGE] - scored[ONE_COIN]
    se = float(difference.std(ddof=1) * np.sqrt(len(difference)))
    one_coin, full = float(scored[ONE_COIN].sum()), float(scored[SHRINKAGE].sum())
    chosen = SHRINKAGE if full - one_coin > CHOICE_SE * se else ONE_COIN
    return ModelChoice(chosen, one_coin, full, se, len(free), sparse)


def sparse_share(encoded: Encoded) -> float:
    """Share of the answers (gold ones too) from workers with fewer than :data:`MIN_WORKER_ANSWERS`."""
    answers = np.bincount(encoded.worker_idx, minlength=encoded.n_workers).astype(np.float64)
    total = answers.sum()
    return float(answers[answers < MIN_WORKER_ANSWERS].sum() / total) if total else 0.0

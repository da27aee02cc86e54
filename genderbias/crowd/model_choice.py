"""Which crowd model a batch's judgments get (:data:`.estimation.MODELS`): more parameters must earn their
place by predicting the votes of queries they did not see (:func:`choose_shrinkage`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from genderbias.crowd.coins import LABEL_PRIOR, ONE_COIN
from genderbias.crowd.difficulty import fit_difficulty, vote_log_likelihood
from genderbias.crowd.estimation import (
    MODELS,
    SHRINKAGE,
    STRENGTHS,
    Encoded,
    ModelChoice,
    _e_step_items,
    _incidence,
    fit,
    model_name,
)

__all__ = ["MAX_SPARSE_SHARE", "MIN_WORKER_ANSWERS", "choose_difficulty", "choose_shrinkage", "encode", "sparse_share"]

#: The full rows win when their held-out log likelihood beats the one-coin's by this many s.e.
CHOICE_SE = 2.0
#: The crowd's accuracy by label wins by this many s.e.: fewer than full rows need, for three parameters for
#: the whole crowd where full rows add twelve a worker (docs/quality.md, "Crowds nobody here tuned for").
LABEL_CHOICE_SE = 1.0
#: EM's tolerance in :func:`choose_difficulty`'s fits (the held-out scores move far less than their s.e.).
CHOICE_TOL = 1e-4
#: Folds of the items in :func:`choose_shrinkage`.
FOLDS = 5
#: A worker with fewer answers than this has a reliability estimated from too few of them ...
MIN_WORKER_ANSWERS = 30
#: ... and above this share of answers from such workers (a sparse crowd) full rows are not offered and the
#: crowd-quality check warns: a row of 11–22 answers follows its worker's own votes, and so the items'
#: majorities, biasing the corrected value (docs/quality.md, "The crowd model").
MAX_SPARSE_SHARE = 0.3


def encode(frame, labels: Sequence[str], gold: Mapping[str, str], *, model: str = "auto") -> Encoded:
    """Codes of a validated judgments frame and its gold rows, with the ``model`` of :data:`MODELS` (``auto``:
    :func:`choose_shrinkage`)."""
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
        label_prior, shrinkage = MODELS[model]
        return replace(encoded, label_prior=label_prior, shrinkage=shrinkage)
    if encoded.n_items == 0:
        return encoded
    choice = choose_shrinkage(encoded)
    return replace(encoded, label_prior=choice.label_prior, shrinkage=choice.shrinkage, choice=choice)


def choose_shrinkage(encoded: Encoded, *, folds: int = FOLDS, seed: int = 0) -> ModelChoice:
    """The crowd model by the held-out log likelihood of the non-gold queries' votes (``folds`` seeded folds,
    gold always in), each step by a margin of standard errors of the items' paired differences:

    1. **The coin**: one accuracy, or the crowd's accuracy by true label, by :data:`LABEL_CHOICE_SE`; scored
       on sparse crowds too, since one accuracy cannot say a crowd that errs by label.
    2. **Full rows** shrunk to the chosen coin's, by :data:`CHOICE_SE`; not on a sparse crowd, where they
       predict held-out votes well yet bias the class means built on the posteriors.
    3. **How far they may leave it**: of :data:`STRENGTHS`, the one with the highest held-out log likelihood.

    Outcomes on the simulated crowds: docs/quality.md, "The crowd model"."""
    sparse = sparse_share(encoded)
    fold, free = held_out_folds(encoded, folds, seed)
    if len(free) < 2 * folds:  # too few queries: one coin
        return ModelChoice(ONE_COIN, 0.0, 0.0, 0.0, len(free), sparse)

    def scored(label_prior: float, shrinkage: float) -> np.ndarray:
        return held_out_scores(replace(encoded, label_prior=label_prior, shrinkage=shrinkage), fold, free)

    one_coin, by_label = scored(ONE_COIN, ONE_COIN), scored(LABEL_PRIOR, ONE_COIN)
    labelled, label_se = better(by_label, one_coin, LABEL_CHOICE_SE)
    label_prior, coin = (LABEL_PRIOR, by_label) if labelled else (ONE_COIN, one_coin)
    found = {"label_prior": label_prior, "by_label": float(by_label.sum()), "label_se": label_se}
    if sparse > MAX_SPARSE_SHARE:  # answers a worker: no full rows
        return ModelChoice(ONE_COIN, float(one_coin.sum()), 0.0, 0.0, len(free), sparse, **found)
    full = scored(label_prior, SHRINKAGE)
    chosen, se = better(full, coin)
    scores = (float(one_coin.sum()), float(full.sum()), se, len(free), sparse)
    if not chosen:
        return ModelChoice(ONE_COIN, *scores, **found)
    strengths = tuple(float(full.sum()) if k == SHRINKAGE else float(scored(label_prior, k).sum()) for k in STRENGTHS)
    return ModelChoice(STRENGTHS[int(np.argmax(strengths))], *scores, **found, strengths=strengths)


def better(more: np.ndarray, fewer: np.ndarray, margin: float = CHOICE_SE) -> tuple[bool, float]:
    """Whether the paired held-out scores ``more`` beat ``fewer`` by ``margin`` s.e. of the summed difference, and that s.e."""
    difference = more - fewer
    se = float(difference.std(ddof=1) * np.sqrt(len(difference)))
    return bool(difference.sum() > margin * se), se


def held_out_folds(encoded: Encoded, folds: int = FOLDS, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Each item's fold ([N]; −1 for gold, never left out) and the non-gold items, dealt at random (seeded)."""
    free = np.setdiff1d(np.arange(encoded.n_items), encoded.gold_rows)
    fold = np.full(encoded.n_items, -1, dtype=np.int64)
    fold[np.random.default_rng(seed).permutation(free)] = np.arange(len(free)) % folds
    return fold, free


def held_out_scores(encoded: Encoded, fold: np.ndarray, free: np.ndarray) -> np.ndarray:
    """[len(free)]: each non-gold item's log Σ_t π_t Π_j θ_w(t, g_ij) under the fit without its fold."""
    folds = int(fold.max()) + 1
    weights = np.stack([(fold != f).astype(np.float64) for f in range(folds)])
    by_item, _ = _incidence(encoded)
    fitted = fit(encoded, weights, held_out=False)
    _, per_item = _e_step_items(fitted.priors, fitted.confusion, encoded, by_item.T.tocsr())
    return per_item[fold[free], free]


@dataclass(frozen=True)
class DifficultyChoice:
    """:func:`choose_difficulty`'s verdict: held-out log likelihoods under both models and the paired s.e."""

    chosen: bool
    difficulty: float
    crowd: float  #: under ``model``, the Dawid–Skene form compared with
    se: float
    items: int
    model: str

    @property
    def gain(self) -> float:
        """Difficulty − Dawid–Skene, in standard errors (positive: the difficulty model predicts better)."""
        return (self.difficulty - self.crowd) / self.se if self.se > 0 else 0.0


def choose_difficulty(
    encoded: Encoded, *, folds: int = FOLDS, seed: int = 0, margin: float = CHOICE_SE
) -> DifficultyChoice:
    """Whether the item-difficulty model (GLAD, :mod:`.difficulty`) beats ``encoded``'s own form by ``margin``
    s.e. on :func:`choose_shrinkage`'s folds (a left-out query's easiness integrated over its prior): one
    parameter a query must be paid for on queries it never saw."""
    model = model_name(encoded.label_prior, encoded.shrinkage)
    fold, free = held_out_folds(encoded, folds, seed)
    if len(free) < 2 * folds:
        return DifficultyChoice(False, 0.0, 0.0, 0.0, len(free), model)
    difficulty = np.empty(len(free))
    for f in range(folds):
        left = fold[free] == f
        fitted = fit_difficulty(encoded, (fold != f).astype(np.float64), tol=CHOICE_TOL)
        difficulty[left] = vote_log_likelihood(fitted, encoded)[free[left]]
    crowd = held_out_scores(encoded, fold, free)
    chosen, se = better(difficulty, crowd, margin)
    return DifficultyChoice(chosen, float(difficulty.sum()), float(crowd.sum()), se, len(free), model)


def sparse_share(encoded: Encoded) -> float:
    """Share of the answers (gold ones too) from workers with fewer than :data:`MIN_WORKER_ANSWERS`."""
    answers = np.bincount(encoded.worker_idx, minlength=encoded.n_workers).astype(np.float64)
    total = answers.sum()
    return float(answers[answers < MIN_WORKER_ANSWERS].sum() / total) if total else 0.0

"""The crowd model under every label probability: Dawid–Skene with priors, fitted by EM, vectorised.

:func:`.aggregation.dawid_skene` fits it once; :func:`.resampling.bootstrap_posteriors` refits it in
every draw of a bootstrap over the items, so the estimation error of the confusion matrices and class
shares enters every interval. Coding and model choice: :mod:`.model_choice`; checks: :mod:`.checks`;
calibration: :mod:`.calibration`.

Model (Dawid & Skene 1979, MAP): item i has a true label T_i ~ π; each answer on it is drawn from row T_i of its
worker's confusion matrix θ_w, independently given T_i. Its forms (one coin per worker, one skill on the crowd's
accuracy by label, full rows shrunk to the coin by so many answers, :data:`STRENGTHS`), the class shares' prior
(:data:`CLASS_PRIOR`) and why: docs/quality.md, "The crowd model". Gold items keep their known label; every
answer to them counts. EM starts from the vote shares and stops when the log posterior changes by less than
``tol`` of its size; the work is vectorised over the judgments (sparse incidence) and over bootstrap draws.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genderbias.crowd.coins import (
    FLOOR,
    LABEL_PRIOR,
    ONE_COIN,
    PATTERN_PRIOR,
    SKILL_PRIOR,
    accuracy_by_label,
    coins,
    max_last,
    one_coin_rows,
    pooled_accuracy,
    skills,
    sum_last,
)

__all__ = [
    "CLASS_PRIOR", "MODELS", "SHRINKAGE", "STRENGTHS", "Encoded", "Fit", "ModelChoice", "fit", "held_out_posteriors", "vote_shares",
]  # fmt: skip

#: Full rows are shrunk to the one-coin rows with this many answers' worth (``Encoded.shrinkage``) in a named
#: model (:data:`MODELS`); ``auto`` takes whichever of :data:`STRENGTHS` best predicts held-out votes: workers
#: who answer one label to everything need rows that leave the coin soon (docs/quality.md, "Shrinkage chosen by
#: held-out votes").
SHRINKAGE = 16.0
STRENGTHS = (2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
#: The models by name: ``(label_prior, shrinkage)`` (``auto``: :func:`.model_choice.choose_shrinkage`).
MODELS = {
    "auto": None,
    "one-coin": (ONE_COIN, ONE_COIN),
    "by-label": (LABEL_PRIOR, ONE_COIN),
    "full": (ONE_COIN, SHRINKAGE),
    "full-by-label": (LABEL_PRIOR, SHRINKAGE),
}
#: Pseudo-count of every label in the prior of the class shares.
CLASS_PRIOR = 0.5


@dataclass(frozen=True)
class Encoded:
    """A judgments frame as integer codes, and the incidence matrices the EM sums with."""

    items: np.ndarray  #: item ids (str), sorted
    workers: np.ndarray  #: worker ids (str), sorted
    labels: tuple[str, ...]
    item_idx: np.ndarray  #: per judgment
    worker_idx: np.ndarray
    label_idx: np.ndarray
    gold_rows: np.ndarray  #: rows of items with a known label
    gold_onehot: np.ndarray  #: their known labels, one-hot
    #: How far rows may leave their one-coin rows; every refit of these judgments uses the same model.
    shrinkage: float = SHRINKAGE
    #: Prior of the crowd's accuracy by label (:data:`.coins.LABEL_PRIOR`), or :data:`ONE_COIN`: one accuracy.
    label_prior: float = ONE_COIN
    #: Why (:func:`choose_shrinkage`), when :func:`encode` chose it.
    choice: ModelChoice | None = None

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def n_workers(self) -> int:
        return len(self.workers)


@dataclass(frozen=True)
class ModelChoice:
    """:func:`.model_choice.choose_shrinkage`'s verdict: held-out log likelihoods of the non-gold items'
    votes under each model, and the paired differences' standard errors."""

    shrinkage: float
    one_coin: float  #: held-out log likelihood under one coin per worker (0: not scored)
    full: float  #: under full rows shrunk to the chosen coin's (0: not scored)
    se: float  #: standard error of (full − the chosen coin), from the items' paired differences
    items: int  #: items scored
    #: Share of answers from workers under ``MIN_WORKER_ANSWERS``; above ``MAX_SPARSE_SHARE`` full rows are not scored.
    sparse: float = 0.0
    label_prior: float = ONE_COIN  #: the chosen coin: one accuracy (:data:`ONE_COIN`) or by label
    by_label: float = 0.0  #: held-out log likelihood under one coin per worker on the crowd's accuracy by label
    label_se: float = 0.0  #: standard error of (by label − one coin)
    #: Held-out log likelihood of the full rows at each of :data:`STRENGTHS` (empty: full rows not chosen).
    strengths: tuple[float, ...] = ()

    @property
    def model(self) -> str:
        return model_name(self.label_prior, self.shrinkage)

    @property
    def coin(self) -> float:
        """The chosen coin's held-out log likelihood."""
        return self.one_coin if self.label_prior == ONE_COIN else self.by_label

    @property
    def gain(self) -> float:
        """Full − the chosen coin, in standard errors (positive: the full rows predict better)."""
        return (self.full - self.coin) / self.se if self.se > 0 else 0.0


def model_name(label_prior: float, shrinkage: float) -> str:
    """The :data:`MODELS` name of a form, whatever the full rows' strength."""
    full = SHRINKAGE if shrinkage != ONE_COIN else ONE_COIN
    return next(name for name, form in MODELS.items() if form == (label_prior, full))


@dataclass
class Fit:
    """One or more fits (leading axis: the draw). ``posteriors`` [B × items × K], ``priors``
    [B × K], ``confusion`` [B × workers × K (true) × K (given)]."""

    posteriors: np.ndarray
    priors: np.ndarray
    confusion: np.ndarray
    iterations: int
    converged: bool
    #: [B × items × K]: :func:`held_out_posteriors`, what every interval built on the labels uses.
    held_out: np.ndarray | None = None


def _incidence(encoded: Encoded):
    """Sparse (judgments × items) and (judgments × worker·label) indicator matrices."""
    from scipy import sparse

    n = len(encoded.item_idx)
    ones = np.ones(n)
    rows = np.arange(n)
    k = len(encoded.labels)
    by_item = sparse.csr_matrix((ones, (rows, encoded.item_idx)), shape=(n, encoded.n_items))
    by_answer = sparse.csr_matrix(
        (ones, (rows, encoded.worker_idx * k + encoded.label_idx)), shape=(n, encoded.n_workers * k)
    )
    return by_item, by_answer


def _counts(
    posteriors: np.ndarray, weights: np.ndarray, encoded: Encoded, by_answer_t
) -> tuple[np.ndarray, np.ndarray]:
    """Soft counts per draw: class counts plus prior [B × K], confusion counts [B × W × T × G] (no prior)."""
    b, _, k = posteriors.shape
    soft = posteriors * weights[:, :, None]  # [B × N × K]
    classes = soft.sum(axis=1) + CLASS_PRIOR
    # Each answer's item row of [N × B·K], taken whole (a gather of rows, not of scattered cells)
    stacked = soft.transpose(1, 0, 2).reshape(encoded.n_items, b * k)[encoded.item_idx]  # [J × B·K]
    counts = np.asarray(by_answer_t @ stacked)  # [W·G × B·K]
    return classes, counts.reshape(encoded.n_workers, k, b, k).transpose(2, 0, 3, 1)  # [B × W × T × G]


def _m_step(
    posteriors: np.ndarray, weights: np.ndarray, encoded: Encoded, by_answer_t
) -> tuple[np.ndarray, np.ndarray]:
    """MAP class shares [B × K] and confusion matrices [B × W × T × G] of every draw."""
    classes, counts = _counts(posteriors, weights, encoded, by_answer_t)
    priors = classes / classes.sum(axis=1, keepdims=True)
    layer = coins(counts)
    rows = one_coin_rows(layer.accuracy(encoded.label_prior), layer.pattern)
    if encoded.shrinkage != ONE_COIN:
        rows = counts + encoded.shrinkage * rows
        rows /= rows.sum(axis=3, keepdims=True)
    return priors, np.maximum(rows, FLOOR)


def held_out_posteriors(posteriors: np.ndarray, weights: np.ndarray, encoded: Encoded, by_item_t, by_answer_t):
    """[B × N × K]: each item's posterior given its votes and the model fitted on the other items.

    Why: an item's soft label pulled its voters' rows toward its own majority, so reading its votes
    through those rows again over-states its certainty. Item i's soft counts (m_i p_i) are taken out of
    its voters' counts and the class counts before its votes are read: the predictive rows given the other
    items, the collapsed Gibbs conditional of Bayesian Dawid–Skene with soft counts (CVB0, Asuncion et al.
    2009). Gold items keep their known label."""
    b, n, k = posteriors.shape
    classes, counts = _counts(posteriors, weights, encoded, by_answer_t)
    layer = coins(counts)
    i, w, g = encoded.item_idx, encoded.worker_idx, encoded.label_idx
    own = posteriors * weights[:, :, None]  # [B × N × K]: m_i p_i(t)
    own_answer = own[:, i, :].transpose(1, 0, 2)  # [J × B × K]
    votes = np.asarray(by_item_t @ np.eye(k)[g])  # [N × K]: the item's votes per label
    if encoded.label_prior == ONE_COIN:
        right_out = own_answer[np.arange(len(g)), :, g]  # [J × B]: m_i p_i(g_ij)
        answers_out = weights[:, i].T  # [J × B]: m_i
        # The item's share of the crowd's pooled accuracy and error pattern (all its votes).
        item_right = np.asarray(by_item_t @ right_out)  # [N × B]
        pooled = pooled_accuracy(
            layer.right.sum(axis=1)[None, :] - item_right[i],
            layer.answers.sum(axis=1)[None, :] - (answers_out * votes.sum(axis=1)[i, None]),
        )  # [J × B]
        accuracy = (layer.right[:, w].T - right_out + SKILL_PRIOR * pooled) / (
            layer.answers[:, w].T - answers_out + SKILL_PRIOR
        )  # [J × B]: a⁻ⁱ_w
        accuracy = accuracy[:, :, None]
    else:
        right_out = own_answer * np.eye(k)[g][:, None, :]  # [J × B × T]: m_i p_i(t) 1[t = g_ij]
        # The item's share of the crowd's accuracy by label (all its votes).
        item_right = np.asarray(by_item_t @ right_out.reshape(len(g), b * k)).reshape(n, b, k)  # [N × B × T]
        item_answers = own.transpose(1, 0, 2) * votes.sum(axis=1)[:, None, None]  # [N × B × T]
        crowd = accuracy_by_label(
            layer.right_by_label.sum(axis=1)[None] - item_right[i],
            layer.answers_by_label.sum(axis=1)[None] - item_answers[i],
            encoded.label_prior,
        )  # [J × B × T]
        accuracy = skills(  # each judgment's worker alone, on a worker axis of 1
            np.maximum(layer.right_by_label[:, w].transpose(1, 0, 2) - right_out, 0.0)[:, :, None, :],
            np.maximum(layer.answers_by_label[:, w].transpose(1, 0, 2) - own_answer, 0.0)[:, :, None, :],
            crowd,
            layer.prior_answers()[None],
        )[0][:, :, 0, :]  # [J × B × T]: a⁻ⁱ_wt
    off = 1.0 - np.eye(k)[g][:, None, :]  # [J × 1 × T]: 1[t ≠ g_ij]
    cell = layer.wrong[:, :, g].transpose(2, 0, 1) - own_answer * votes[i, g][:, None, None] * off
    row = layer.wrong.sum(axis=2)[None] - own_answer * (votes.sum(axis=1)[i, None, None] - votes[i][:, None, :])
    wrong = (np.maximum(cell, 0.0) + PATTERN_PRIOR * off) / (
        np.maximum(row, 0.0) + PATTERN_PRIOR * (k - 1)
    )  # E⁻ⁱ(t, g_ij)
    coin = (1.0 - off) * accuracy + off * (1.0 - accuracy) * wrong  # [J × B × T]
    if encoded.shrinkage == ONE_COIN:
        theta = coin
    else:
        cell = counts[:, w, :, g] - own_answer  # [J × B × T]
        row = counts.sum(axis=3)[:, w, :].transpose(1, 0, 2) - own_answer
        theta = (np.maximum(cell, 0.0) + encoded.shrinkage * coin) / (np.maximum(row, 0.0) + encoded.shrinkage)
    log_lik = np.log(np.maximum(theta, FLOOR))
    summed = np.asarray(by_item_t @ log_lik.reshape(len(encoded.item_idx), b * k))
    log_post = summed.reshape(n, b, k).transpose(1, 0, 2) + np.log(np.maximum(classes[:, None, :] - own, FLOOR))
    unnormalised = np.exp(log_post - log_post.max(axis=2, keepdims=True))
    return _fix_gold(unnormalised / unnormalised.sum(axis=2, keepdims=True), encoded)


def _e_step(priors: np.ndarray, confusion: np.ndarray, encoded: Encoded, by_item_t) -> tuple[np.ndarray, np.ndarray]:
    """Posteriors [B × N × K] and each draw's log marginal likelihood [B]."""
    posteriors, per_item = _e_step_items(priors, confusion, encoded, by_item_t)
    return posteriors, per_item.sum(axis=1)


def _e_step_items(
    priors: np.ndarray, confusion: np.ndarray, encoded: Encoded, by_item_t
) -> tuple[np.ndarray, np.ndarray]:
    """Posteriors [B × N × K] and each item's log marginal likelihood of its votes [B × N]."""
    b, k = priors.shape
    # log θ_w(t, g) once per worker and given label [W·G × B·K], then each answer's row of it
    log_rows = np.log(confusion.transpose(1, 3, 0, 2).reshape(-1, b * k))
    log_lik = log_rows[encoded.worker_idx * k + encoded.label_idx]  # [J × B·K]
    summed = np.asarray(by_item_t @ log_lik)  # [N × B·K]
    log_post = summed.reshape(encoded.n_items, b, k).transpose(1, 0, 2) + np.log(priors)[:, None, :]
    peak = max_last(log_post)[:, :, None]
    unnormalised = np.exp(log_post - peak)
    norm = sum_last(unnormalised)[:, :, None]
    return unnormalised / norm, (np.log(norm) + peak)[:, :, 0]


def _fix_gold(posteriors: np.ndarray, encoded: Encoded) -> np.ndarray:
    if len(encoded.gold_rows):
        posteriors[:, encoded.gold_rows, :] = encoded.gold_onehot[None]
    return posteriors


def vote_shares(encoded: Encoded) -> np.ndarray:
    """[N × K]: each item's share of votes per label (gold one-hot): where EM starts."""
    shares = np.zeros((encoded.n_items, len(encoded.labels)))
    np.add.at(shares, (encoded.item_idx, encoded.label_idx), 1.0)
    shares /= shares.sum(axis=1, keepdims=True)
    return _fix_gold(shares[None], encoded)[0]


def fit(
    encoded: Encoded,
    weights: np.ndarray | None = None,
    start: np.ndarray | None = None,
    *,
    max_iter: int = 100,
    tol: float = 1e-6,
    held_out: bool = True,
) -> Fit:
    """EM for every draw at once: ``weights`` [B × N] item multiplicities (default one draw of ones),
    ``start`` [N × K] or [B × N × K] soft labels (default :func:`vote_shares`).

    Each draw stops on its own (``tol``), so its fit is the one it would get alone whatever shares its
    chunk. ``converged``: every draw did within ``max_iter``; ``iterations``: the most any took."""
    if max_iter < 1:
        raise ValueError("max_iter must be at least 1")
    weights = np.ones((1, encoded.n_items)) if weights is None else np.asarray(weights, dtype=np.float64)
    b = weights.shape[0]
    start = vote_shares(encoded) if start is None else np.asarray(start, dtype=np.float64)
    posteriors = _fix_gold(np.broadcast_to(start, (b, *start.shape[-2:])).copy(), encoded)
    by_item, by_answer = _incidence(encoded)
    by_item_t, by_answer_t = by_item.T.tocsr(), by_answer.T.tocsr()
    previous = np.full(b, -np.inf)
    active = np.arange(b)
    iterations = 0
    for iterations in range(1, max_iter + 1):  # noqa: B007 -- the count is reported
        every = len(active) == b
        current = posteriors if every else posteriors[active]
        priors, confusion = _m_step(current, weights if every else weights[active], encoded, by_answer_t)
        current, log_likelihood = _e_step(priors, confusion, encoded, by_item_t)
        posteriors[active] = _fix_gold(current, encoded)
        settled = np.abs(log_likelihood - previous[active]) <= tol * np.maximum(1.0, np.abs(log_likelihood))
        previous[active] = log_likelihood
        active = active[~settled]
        if not len(active):
            break
    converged = not len(active)
    priors, confusion = _m_step(posteriors, weights, encoded, by_answer_t)
    left_out = held_out_posteriors(posteriors, weights, encoded, by_item_t, by_answer_t) if held_out else None
    return Fit(posteriors, priors, confusion, iterations, converged, left_out)

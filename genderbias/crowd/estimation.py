"""The crowd model under every label probability: Dawid–Skene with priors, fitted by EM, vectorised.

Pure (numpy, scipy.sparse; no Django). :func:`genderbias.crowd.aggregation.dawid_skene` fits it
once; :func:`genderbias.crowd.resampling.bootstrap_posteriors` refits it inside each draw of a
cluster bootstrap over the items, so that the estimation error of the workers' confusion matrices
and of the class shares enters every interval built on the posteriors, not only the sampling of
the queries. The judgments are coded and the model chosen in :mod:`genderbias.crowd.model_choice`;
the fit is checked in :mod:`genderbias.crowd.checks` and calibrated in
:mod:`genderbias.crowd.calibration`.

Model (Dawid & Skene 1979, maximum a posteriori): item i has a true label T_i ~ π; each answer j
of worker w on it is drawn from row T_i of w's confusion matrix θ_w, independently given T_i.
The confusion matrices are built in two layers, and the data choose how far the second goes
(:func:`genderbias.crowd.model_choice.choose_shrinkage`):

- **One coin per worker, one error pattern for the crowd**: worker w names the truth with
  probability a_w whatever the label, and errs along the crowd's pooled error pattern E (rows:
  true label; how the wrong answers spread, estimated from every worker's soft counts):
  θ_w(t, t) = a_w, θ_w(t, g) = (1 − a_w) E(t, g). a_w has a Beta prior worth
  :data:`SKILL_PRIOR` answers centred on the crowd's pooled accuracy (itself with a prior of
  :data:`POOLED_PRIOR` answers of "right :data:`POOLED_RIGHT` of the time"); E has
  :data:`PATTERN_PRIOR` pseudo-answers in each wrong cell. A worker's every answer estimates
  a_w, so a worker with 11 answers (a Prolific participant) or a label no query has (o in the
  demo's pool) still gets a sound row: the diagonal of a rare label's row is a_w, never free.
  Full per-worker rows are unidentifiable there: with three votes per query and a rare label,
  EM drifts to a state where the rare label's row "answers o a third of the time", absorbs the
  queries with an o vote and invents a class (docs/metrics.md, "The crowd model").
- **Full confusion rows**, each a Dirichlet around the worker's one-coin row worth
  :data:`SHRINKAGE` answers: a worker whose errors have their own shape (a lazy worker who
  answers n to everything, a spammer, a worker who swaps two labels) keeps it once the data
  show it.
- **Class shares**: Dirichlet(1 + :data:`CLASS_PRIOR`): half a query's worth per label, so a
  label nobody supports keeps a share near 0 (never exactly 0: a single contrary vote cannot
  then veto an otherwise certain item, and EM cannot stall in a degenerate state).
- **Gold**: items with a known label keep it (posterior one-hot in every round); every answer
  to them counts, repeated ones too (:func:`genderbias.crowd.aggregation.one_answer_per_worker`).
- Spammers and a lazy worker get rows that carry (almost) no evidence, so their votes stop
  moving the posteriors.

EM starts from the items' vote shares (gold one-hot) and stops when the log posterior changes by
less than ``tol`` of its size. The work is vectorised over the judgments (sparse incidence
matrices) and over bootstrap draws at once (its cost per draw: docs/benchmarks.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Answers' worth of the crowd's pooled accuracy in the Beta prior of each worker's accuracy a_w.
#: A worker with few answers agrees with the posteriors its own votes helped make, so its accuracy
#: read from them is too high and its votes too trusted; a prior worth 25 answers takes that bias off a
#: Prolific-like crowd (11–22 answers per participant) and barely moves the study's crowd (workers with
#: hundreds of answers). The measured biases by prior: docs/quality.md, "The crowd model".
SKILL_PRIOR = 25.0
#: The pooled accuracy's own prior: :data:`POOLED_PRIOR` answers of "right :data:`POOLED_RIGHT`
#: of the time".
POOLED_PRIOR = 2.0
POOLED_RIGHT = 0.7
#: Pseudo-answers in each wrong cell of the crowd's error pattern E.
PATTERN_PRIOR = 1.0
#: The two models :func:`choose_shrinkage` picks from (``Encoded.shrinkage``): one coin per
#: worker (the rows *are* the one-coin rows), or full rows shrunk to them with this many answers' worth.
ONE_COIN = float("inf")
SHRINKAGE = 16.0
#: What :func:`encode` may be asked for (``auto``: :func:`choose_shrinkage`).
MODELS = {"auto": None, "one-coin": ONE_COIN, "full": SHRINKAGE}
#: Pseudo-count of every label in the prior of the class shares.
CLASS_PRIOR = 0.5
#: A floor under every probability, against log(0) for a label nobody gave.
FLOOR = 1e-6


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
    #: How far the workers' rows may leave their one-coin rows (:data:`ONE_COIN` or
    #: :data:`SHRINKAGE` answers' worth): every refit of these judgments uses the same model.
    shrinkage: float = SHRINKAGE
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
    """:func:`choose_shrinkage`'s verdict: the held-out log likelihood of the queries' votes under
    each model, summed over the non-gold items, and the paired difference's standard error."""

    shrinkage: float
    one_coin: float  #: held-out log likelihood under one coin per worker
    full: float  #: under full rows shrunk to them
    se: float  #: standard error of (full − one_coin), from the items' paired differences
    items: int  #: items scored
    #: Share of the answers from workers with fewer than :data:`MIN_WORKER_ANSWERS`; above
    #: :data:`MAX_SPARSE_SHARE` the one coin is taken without scoring (``one_coin`` = ``full`` = 0).
    sparse: float = 0.0

    @property
    def model(self) -> str:
        return "one-coin" if self.shrinkage == ONE_COIN else "full"

    @property
    def gain(self) -> float:
        """Full − one-coin, in standard errors (positive: the full rows predict better)."""
        return (self.full - self.one_coin) / self.se if self.se > 0 else 0.0


@dataclass
class Fit:
    """One or more fits (leading axis: the draw). ``posteriors`` [B × items × K], ``priors``
    [B × K], ``confusion`` [B × workers × K (true) × K (given)]."""

    posteriors: np.ndarray
    priors: np.ndarray
    confusion: np.ndarray
    iterations: int
    converged: bool
    #: [B × items × K]: each item's posterior under the model fitted on the *other* items
    #: (:func:`held_out_posteriors`): what every interval built on the labels uses.
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
    """Soft counts of every draw, from soft labels ``posteriors`` [B × N × K] and item
    multiplicities ``weights`` [B × N]: class counts plus their prior [B × K] and each worker's
    confusion counts [B × W × T × G] (no prior)."""
    b, _, k = posteriors.shape
    soft = posteriors * weights[:, :, None]  # [B × N × K]
    classes = soft.sum(axis=1) + CLASS_PRIOR
    per_answer = soft[:, encoded.item_idx, :]  # [B × J × K]
    stacked = per_answer.transpose(1, 0, 2).reshape(len(encoded.item_idx), b * k)
    counts = np.asarray(by_answer_t @ stacked)  # [W·G × B·K]
    return classes, counts.reshape(encoded.n_workers, k, b, k).transpose(2, 0, 3, 1)  # [B × W × T × G]


@dataclass(frozen=True)
class _Coins:
    """The one-coin layer of every draw: the soft counts each worker's accuracy is estimated from
    (``right`` and ``answers`` [B × W]) and the crowd's pooled wrong answers ``wrong`` [B × T × G]
    (0 on the diagonal), from which the pooled accuracy and the error pattern E follow."""

    right: np.ndarray
    answers: np.ndarray
    wrong: np.ndarray

    @property
    def pooled(self) -> np.ndarray:
        """The crowd's MAP accuracy [B]."""
        return _pooled(self.right.sum(axis=1), self.answers.sum(axis=1))

    @property
    def pattern(self) -> np.ndarray:
        """E [B × T × G]: rows sum to 1 over the wrong answers, 0 on the diagonal."""
        k = self.wrong.shape[-1]
        cells = self.wrong + PATTERN_PRIOR * (1.0 - np.eye(k))
        return cells / cells.sum(axis=2, keepdims=True)

    def accuracy(self) -> np.ndarray:
        """Each worker's MAP accuracy a_w [B × W]."""
        return (self.right + SKILL_PRIOR * self.pooled[:, None]) / (self.answers + SKILL_PRIOR)


def _pooled(right, answers):
    return (right + POOLED_PRIOR * POOLED_RIGHT) / (answers + POOLED_PRIOR)


def _coins(counts: np.ndarray) -> _Coins:
    k = counts.shape[-1]
    right = np.einsum("bwtt->bw", counts)
    return _Coins(right, counts.sum(axis=(2, 3)), counts.sum(axis=1) * (1.0 - np.eye(k)))


def _one_coin_rows(accuracy: np.ndarray, pattern: np.ndarray) -> np.ndarray:
    """[B × W × T × G]: θ_w(t, t) = a_w, θ_w(t, g) = (1 − a_w) E(t, g)."""
    k = pattern.shape[-1]
    a = accuracy[:, :, None, None]
    return a * np.eye(k) + (1.0 - a) * pattern[:, None, :, :]


def _m_step(
    posteriors: np.ndarray, weights: np.ndarray, encoded: Encoded, by_answer_t
) -> tuple[np.ndarray, np.ndarray]:
    """MAP class shares [B × K] and confusion matrices [B × W × T × G] of every draw."""
    classes, counts = _counts(posteriors, weights, encoded, by_answer_t)
    priors = classes / classes.sum(axis=1, keepdims=True)
    coins = _coins(counts)
    rows = _one_coin_rows(coins.accuracy(), coins.pattern)
    if encoded.shrinkage != ONE_COIN:
        rows = counts + encoded.shrinkage * rows
        rows /= rows.sum(axis=3, keepdims=True)
    return priors, np.maximum(rows, FLOOR)


def held_out_posteriors(posteriors: np.ndarray, weights: np.ndarray, encoded: Encoded, by_item_t, by_answer_t):
    """[B × N × K]: each item's posterior given its own votes and the model fitted on the other
    items, from the converged soft labels ``posteriors`` [B × N × K].

    The fitted confusion matrices and class shares were estimated from every item, each item's
    own votes included: an item's soft label has pulled its voters' rows toward its own majority,
    so reading its votes through those rows again makes it look more certain of that majority
    than it is (with three votes per item and a worker seen on few items, much more). Here item
    i's own soft counts (multiplicity m_i × posterior p_i, one answer per worker) are taken out
    of its voters' counts and out of the class counts before its votes are read: the worker's
    accuracy a⁻ⁱ_w = (r_w − m_i p_i(g_ij) + prior) / (n_w − m_i + prior), its one-coin row c⁻ⁱ_w
    from it, and (full rows) θ⁻ⁱ_w(t, g) = (n_wtg − m_i p_i(t)·1[g = g_ij] + S c⁻ⁱ_w(t, g)) /
    (n_wt − m_i p_i(t) + S) — the posterior-mean (predictive) rows given the other items, the
    conditional of the collapsed Gibbs sampler of Bayesian Dawid–Skene with soft counts (CVB0,
    Asuncion et al. 2009). The crowd's pooled accuracy and error pattern keep the item (one
    query in thousands of answers). Gold items keep their known label."""
    b, n, k = posteriors.shape
    classes, counts = _counts(posteriors, weights, encoded, by_answer_t)
    coins = _coins(counts)
    i, w, g = encoded.item_idx, encoded.worker_idx, encoded.label_idx
    jj = np.arange(len(g))
    own = posteriors * weights[:, :, None]  # [B × N × K]: m_i p_i(t)
    own_answer = own[:, i, :].transpose(1, 0, 2)  # [J × B × K]
    right_out = own_answer[jj, :, g]  # [J × B]: m_i p_i(g_ij)
    answers_out = weights[:, i].T  # [J × B]: m_i
    # The item's share of the crowd's pooled accuracy and error pattern (all its votes).
    item_right = np.asarray(by_item_t @ right_out)  # [N × B]
    votes = np.asarray(by_item_t @ np.eye(k)[g])  # [N × K]: the item's votes per label
    pooled = _pooled(
        coins.right.sum(axis=1)[None, :] - item_right[i],
        coins.answers.sum(axis=1)[None, :] - (answers_out * votes.sum(axis=1)[i, None]),
    )  # [J × B]
    accuracy = (coins.right[:, w].T - right_out + SKILL_PRIOR * pooled) / (
        coins.answers[:, w].T - answers_out + SKILL_PRIOR
    )  # [J × B]: a⁻ⁱ_w
    off = 1.0 - np.eye(k)[g][:, None, :]  # [J × 1 × T]: 1[t ≠ g_ij]
    cell = coins.wrong[:, :, g].transpose(2, 0, 1) - own_answer * votes[i, g][:, None, None] * off
    row = coins.wrong.sum(axis=2)[None] - own_answer * (votes.sum(axis=1)[i, None, None] - votes[i][:, None, :])
    wrong = (np.maximum(cell, 0.0) + PATTERN_PRIOR * off) / (
        np.maximum(row, 0.0) + PATTERN_PRIOR * (k - 1)
    )  # E⁻ⁱ(t, g_ij)
    coin = (1.0 - off) * accuracy[:, :, None] + off * (1.0 - accuracy[:, :, None]) * wrong  # [J × B × T]
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
    log_lik = np.log(confusion[:, encoded.worker_idx, :, encoded.label_idx])  # [J × B × K]
    summed = np.asarray(by_item_t @ log_lik.reshape(len(encoded.item_idx), b * k))  # [N × B·K]
    log_post = summed.reshape(encoded.n_items, b, k).transpose(1, 0, 2) + np.log(priors)[:, None, :]
    peak = log_post.max(axis=2, keepdims=True)
    unnormalised = np.exp(log_post - peak)
    norm = unnormalised.sum(axis=2, keepdims=True)
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
    """EM for every draw at once: ``weights`` [B × N] item multiplicities (default: one draw of
    ones), ``start`` [N × K] or [B × N × K] initial soft labels (default :func:`vote_shares`).

    Each draw stops on its own, when its log likelihood moved by at most ``tol`` of its size
    (``converged``: every draw did within ``max_iter`` rounds; ``iterations``: the most any took):
    a draw's fit is the one it would get alone, whichever draws share its chunk, and the draws
    that settle early cost nothing while the slowest go on."""
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

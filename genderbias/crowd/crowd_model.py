"""The crowd model under every label probability: Dawid–Skene with priors, refitted per bootstrap draw.

Pure (numpy, scipy.sparse; no Django). :func:`genderbias.crowd.aggregation.dawid_skene` fits it
once; :func:`bootstrap_posteriors` refits it inside each draw of a cluster bootstrap over the items,
so that the estimation error of the workers' confusion matrices and of the class shares enters
every interval built on the posteriors (a report on a batch's labels, the machine's de-noised
accuracy), not only the sampling of the queries.

Model (Dawid & Skene 1979, maximum a posteriori): item i has a true label T_i ~ π; each answer j
of worker w on it is drawn from row T_i of w's confusion matrix θ_w, independently given T_i.
The confusion matrices are built in two layers, and the data choose how far the second goes
(:func:`choose_shrinkage`):

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
  queries with an o vote and invents a class (the demo's crowd: 13% Other where 0.1% are).
- **Full confusion rows**, each a Dirichlet around the worker's one-coin row worth
  :data:`SHRINKAGE` answers: a worker whose errors have their own shape (a lazy worker who
  answers n to everything, a spammer, a worker who swaps two labels) keeps it once the data
  show it.

:func:`choose_shrinkage` picks between them (``Encoded.shrinkage``: :data:`ONE_COIN` or
:data:`SHRINKAGE`) by the held-out log likelihood of the queries' votes (5 folds of the items):
the full rows win only when they predict held-out queries' votes better by more than
:data:`CHOICE_SE` standard errors of the paired difference (the simpler model otherwise).

- **Class shares**: Dirichlet(1 + :data:`CLASS_PRIOR`): half a query's worth per label, so a
  label nobody supports keeps a share near 0 (never exactly 0: a single contrary vote cannot
  then veto an otherwise certain item, and EM cannot stall in a degenerate state).
- **Gold**: items with a known label keep it (posterior one-hot in every round); every answer
  to them counts, repeated ones too (:func:`genderbias.crowd.aggregation.one_answer_per_worker`).
- Spammers and a lazy worker get rows that carry (almost) no evidence, so their votes stop
  moving the posteriors.

EM starts from the items' vote shares (gold one-hot) and stops when the log posterior changes by
less than ``tol`` of its size. The work is vectorised over the judgments (sparse incidence
matrices) and over bootstrap draws at once: a refit at 3,750 items × 3 votes costs a few
milliseconds per draw (``docs/benchmarks.md``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

#: Answers' worth of the crowd's pooled accuracy in the Beta prior of each worker's accuracy a_w.
#: A worker with few answers agrees with the posteriors its own votes helped make, so its accuracy
#: read from them is too high and its votes too trusted: on a Prolific-like crowd (11–22 answers per
#: participant, 3,750 queries, 8 studies, one coin forced) the corrected value came out +0.0049 (s.e.
#: 0.0014) too high with a prior of 4 answers, +0.0019 with 12, +0.0006 (0.0015) with 25 (with the
#: held-out choice, 12 studies: +0.0028 (0.0014)); the study's crowd (workers with hundreds of
#: answers) moved by under 0.0006 (docs/quality.md, "The crowd model").
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
#: The full rows win when their held-out log likelihood beats the one-coin's by this many s.e.
CHOICE_SE = 2.0
#: Folds of the items in :func:`choose_shrinkage`.
FOLDS = 5
#: A worker with fewer answers than this has a reliability estimated from too few of them ...
MIN_WORKER_ANSWERS = 30
#: ... and when more than this share of the answers come from such workers (a sparse crowd), full rows
#: are not offered (:func:`choose_shrinkage`: one coin per worker) and the crowd-quality warning says the
#: intervals may be too narrow (:func:`genderbias.crowd.label_probabilities.crowd_quality`). Measured
#: shares: Prolific-like 0.52–0.64, the study's crowd at 1,000 queries 0.03–0.10, at 3,750 0.00. On the
#: Prolific-like crowd at 3,750 queries the held-out choice took the full rows in about half the studies,
#: and their label-corrected value sat +0.0025 above the one coin's on the same answers (11 of 11 studies,
#: seeds [2040, s]; docs/quality.md, "The crowd model"): a row of 11–22 answers shrunk by
#: :data:`SHRINKAGE` follows its worker's own votes, and so the items' majorities.
MAX_SPARSE_SHARE = 0.3
#: Pseudo-count of every label in the prior of the class shares.
CLASS_PRIOR = 0.5
#: A floor under every probability, against log(0) for a label nobody gave.
FLOOR = 1e-6
#: Bootstrap draws refitted together (memory: draws × judgments × labels floats).
CHUNK = 50


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
    from dataclasses import replace

    if model != "auto":
        return replace(encoded, shrinkage=MODELS[model])
    if encoded.n_items == 0:
        return encoded
    choice = choose_shrinkage(encoded)
    return replace(encoded, shrinkage=choice.shrinkage, choice=choice)


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
    Converged when every draw's log likelihood moved by at most ``tol`` of its size."""
    if max_iter < 1:
        raise ValueError("max_iter must be at least 1")
    weights = np.ones((1, encoded.n_items)) if weights is None else np.asarray(weights, dtype=np.float64)
    b = weights.shape[0]
    start = vote_shares(encoded) if start is None else np.asarray(start, dtype=np.float64)
    posteriors = _fix_gold(np.broadcast_to(start, (b, *start.shape[-2:])).copy(), encoded)
    by_item, by_answer = _incidence(encoded)
    by_item_t, by_answer_t = by_item.T.tocsr(), by_answer.T.tocsr()
    previous = np.full(b, -np.inf)
    converged = False
    iterations = 0
    for iterations in range(1, max_iter + 1):  # noqa: B007 -- the count is reported
        priors, confusion = _m_step(posteriors, weights, encoded, by_answer_t)
        posteriors, log_likelihood = _e_step(priors, confusion, encoded, by_item_t)
        posteriors = _fix_gold(posteriors, encoded)
        if np.all(np.abs(log_likelihood - previous) <= tol * np.maximum(1.0, np.abs(log_likelihood))):
            converged = True
            break
        previous = log_likelihood
    priors, confusion = _m_step(posteriors, weights, encoded, by_answer_t)
    left_out = held_out_posteriors(posteriors, weights, encoded, by_item_t, by_answer_t) if held_out else None
    return Fit(posteriors, priors, confusion, iterations, converged, left_out)


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
    from dataclasses import replace

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


def bootstrap_posteriors(
    encoded: Encoded, weights: np.ndarray, start: np.ndarray, *, max_iter: int = 50, tol: float = 1e-5
) -> np.ndarray:
    """[B × N × K] (float32) held-out posteriors (:func:`held_out_posteriors`) of every item under
    the model refitted with each draw's item multiplicities ``weights`` [B × N], warm-started from
    the full fit's ``start`` [N × K]. Every item gets a posterior, also one a draw left out
    (weight 0): the refitted workers' confusion matrices and class shares applied to its votes."""
    weights = np.asarray(weights, dtype=np.float64)
    out = np.empty((weights.shape[0], encoded.n_items, len(encoded.labels)), dtype=np.float32)
    for first in range(0, weights.shape[0], CHUNK):
        chunk = weights[first : first + CHUNK]
        out[first : first + len(chunk)] = fit(encoded, chunk, start, max_iter=max_iter, tol=tol).held_out
    return out


#: What a delete-a-group jackknife of the crowd model leaves out (:func:`jackknife_groups`).
LEAVE_OUT = ("workers", "answers")


def jackknife_groups(encoded: Encoded, by: str, blocks: int, fixed: Sequence[str] = ()) -> np.ndarray:
    """Each answer's group of a delete-a-group jackknife ([J]; −1 for the answers of the ``fixed``
    workers, e.g. the machine, never left out), G = min(blocks, units):

    - ``workers``: a worker's answers go together (gold and repeated answers with them), workers
      dealt by their answer counts (:func:`genderbias.stats.intervals.unit_groups`);
    - ``answers``: every answer on its own, dealt in turn (answer j of the others to group j mod G).
    """
    from genderbias.stats import intervals

    if by not in LEAVE_OUT:
        raise ValueError(f"jackknife by {by!r}: expected one of {', '.join(LEAVE_OUT)}")
    fixed = {str(w) for w in fixed}
    movable_worker = np.array([str(w) not in fixed for w in encoded.workers], dtype=bool)
    out = np.full(len(encoded.worker_idx), -1, dtype=np.int64)
    movable = movable_worker[encoded.worker_idx] if len(encoded.worker_idx) else np.zeros(0, dtype=bool)
    if by == "answers":
        out[movable] = np.arange(movable.sum()) % max(1, min(blocks, int(movable.sum())))
        return out
    counts = np.bincount(encoded.worker_idx, minlength=encoded.n_workers)
    group = np.full(encoded.n_workers, -1, dtype=np.int64)
    if movable_worker.any():
        group[movable_worker] = intervals.unit_groups(counts[movable_worker], blocks)
    return group[encoded.worker_idx]


#: EM's stopping rule for the jackknife refits (:func:`leave_out_posteriors`), tighter than the
#: bootstrap's: a refit warm-started from the full fit and stopped early stays near it, and a
#: jackknife's spread is multiplied by G − 1, so the shortfall shows: at 1,000 queries the
#: workers' jackknife variance was 0.81 of the converged one with 50 rounds to 1e-5, 0.99 with 300 to 1e-8.
JACKKNIFE_MAX_ITER, JACKKNIFE_TOL = 300, 1e-8


def leave_out_posteriors(
    encoded: Encoded,
    start: np.ndarray,
    groups: np.ndarray,
    *,
    max_iter: int = JACKKNIFE_MAX_ITER,
    tol: float = JACKKNIFE_TOL,
) -> np.ndarray:
    """[G × N × K] (float32) held-out posteriors of every item under the model refitted without
    each group of answers (``groups`` [J], :func:`jackknife_groups`; −1: always kept), warm-started
    from ``start`` [N × K]; an item none of the remaining answers is on gets the refitted class
    shares. Left out by workers, the spread of these refits is the variance from which workers a
    study happened to get (and from estimating their confusion matrices), which resampling the
    items with their votes does not see; left out by answers, it is the answers' own share, which
    both see (:func:`genderbias.stats.intervals.extra_variance`)."""
    from dataclasses import replace

    count = int(groups.max()) + 1 if len(groups) else 0
    out = np.empty((count, encoded.n_items, len(encoded.labels)), dtype=np.float32)
    for g in range(count):
        keep = groups != g
        reduced = replace(
            encoded,
            item_idx=encoded.item_idx[keep],
            worker_idx=encoded.worker_idx[keep],
            label_idx=encoded.label_idx[keep],
        )
        out[g] = fit(reduced, None, start, max_iter=max_iter, tol=tol).held_out[0]
    return out


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


#: Spreads σ of query difficulty :func:`difficulty_spread` tries: every answer's error odds on an item
#: × exp(σ·d), d ~ N(0, 1) per item (the simulation's ``Crowd.difficulty``, benchmarks/crowd_simulation.py).
SPREADS = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5)
#: Replicate crowds per spread, and for the bias at the chosen spread (:func:`replicate_crowds`).
SPREAD_REPLICATES = 4
BIAS_REPLICATES = 8


def _answers_with_difficulty(
    rng: np.random.Generator, rows: np.ndarray, truth: np.ndarray, factor: np.ndarray
) -> np.ndarray:
    """Answers drawn from ``rows`` [R × J × K] (each answer's fitted row given its true label ``truth``
    [R × J]) with each answer's odds of being wrong × ``factor`` [R × J], the wrong answers keeping their
    proportions."""
    k = rows.shape[-1]
    onehot = np.eye(k)[truth]
    right = np.clip((rows * onehot).sum(axis=2), 1e-12, 1 - 1e-12)
    wrong = rows * (1 - onehot)
    wrong /= np.maximum(wrong.sum(axis=2, keepdims=True), 1e-300)
    p_right = 1.0 / (1.0 + (1.0 - right) / right * factor)
    chances = (1.0 - p_right)[:, :, None] * wrong + p_right[:, :, None] * onehot
    return np.minimum((rng.random(truth.shape)[:, :, None] > chances.cumsum(axis=2)).sum(axis=2), k - 1)


def _spread_statistic(encoded: Encoded, priors: np.ndarray, confusion: np.ndarray, seed: int) -> float:
    """What :func:`difficulty_spread` matches: the gold questions' scatter (:func:`gold_check`'s ``chi2``)
    when at least 3 gold questions have 5 answers, else the unanimous-or-split queries beyond what the
    fitted model expects (:func:`predictive_check`'s ``extreme``)."""
    gold = gold_check(encoded, confusion)
    if gold["questions"] >= 3:
        return float(gold["chi2"])
    check = predictive_check(encoded, priors, confusion, replicates=50, seed=seed)["extreme"]
    return check["observed"] - check["expected"]


def _replicates(
    encoded: Encoded,
    posteriors: np.ndarray,
    confusion: np.ndarray,
    spread: float,
    count: int,
    rng,
    exempt: Sequence[int] = (),
) -> tuple[np.ndarray, list[Fit], list[Encoded]]:
    """``count`` replicate crowds of the batch as fitted, with item difficulty of spread ``spread`` (not for
    the workers of index ``exempt``: a machine whose errors do not follow the items' difficulty), refitted."""
    from dataclasses import replace

    k = len(encoded.labels)
    truth = (rng.random((count, encoded.n_items))[:, :, None] > posteriors.cumsum(axis=1)[None, :, :-1]).sum(axis=2)
    truth = np.minimum(truth, k - 1)
    if len(encoded.gold_rows):
        truth[:, encoded.gold_rows] = encoded.gold_onehot.argmax(axis=1)[None, :]
    rows = confusion[encoded.worker_idx[None, :], truth[:, encoded.item_idx], :]
    factor = np.exp(spread * rng.standard_normal((count, encoded.n_items)))[:, encoded.item_idx]
    if len(exempt):
        factor[:, np.isin(encoded.worker_idx, exempt)] = 1.0
    drawn = _answers_with_difficulty(rng, rows, truth[:, encoded.item_idx], factor)
    refitted = [replace(encoded, label_idx=drawn[r]) for r in range(count)]
    return truth, [fit(e, max_iter=100) for e in refitted], refitted


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
    more extreme than they are). Measured on the simulated difficulty crowd (σ = 1, 10 gold questions,
    1,000 queries, 8 studies): 0.73 (s.e. 0.11) from the gold scatter, 0.61 (0.11) from the excess of
    unanimous-or-split queries; on the moderate crowd (σ = 0) 0.08 (0.08) and 0.37 (0.13)
    (docs/quality.md "Why the intervals miss on item difficulty")."""
    rng = np.random.default_rng(seed)
    observed = _spread_statistic(encoded, priors, confusion, seed)
    expected = []
    for spread in spreads:
        _, fits, refitted = _replicates(encoded, posteriors, confusion, spread, replicates, rng)
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


def replicate_crowds(
    encoded: Encoded,
    posteriors: np.ndarray,
    confusion: np.ndarray,
    spread: float,
    *,
    replicates: int = BIAS_REPLICATES,
    seed: int = 0,
    exempt: Sequence[int] = (),
) -> tuple[np.ndarray, list[Fit], list[Encoded]]:
    """``(truth [R × N], fits, answers)`` of ``replicates`` crowds drawn from the fit (true labels from its
    ``posteriors`` [N × K], the batch's own worker–item pairs answered from its rows ``confusion`` [W × K × K])
    with item difficulty of spread ``spread`` (as :func:`difficulty_spread` draws them), each refitted
    (``answers``: the replicate's judgments): how far the model sits from a truth it is not told. The workers
    of index ``exempt`` answer without the items' difficulty."""
    return _replicates(encoded, posteriors, confusion, spread, replicates, np.random.default_rng([seed, 1]), exempt)

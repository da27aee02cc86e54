"""The item-difficulty crowd model (GLAD, Whitehill et al. 2009): worker ability α_w, query easiness β_i.

Dawid–Skene (:mod:`.estimation`) reads a query's answers as independent given its true label; where some
queries are hard for everyone their answers err together. GLAD gives each query an easiness, P(right) = σ(α_w β_i),
β_i = exp(b_i), with the priors :data:`ALPHA_MEAN` and :data:`EASINESS_MEAN` (crowd-kit's fixed b̄; estimated here
unless fixed) and wrong answers along the crowd's pattern (``"crowd"``) or even (``"even"``, crowd-kit's):
docs/quality.md, "The item-difficulty model". EM: Dawid–Skene's E-step; the M-step sets π and E from soft counts
and (α, b) by L-BFGS on a weighted logistic regression of "the answer is right".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from genderbias.crowd.coins import FLOOR, PATTERN_PRIOR
from genderbias.crowd.estimation import CLASS_PRIOR, Encoded, _fix_gold, _incidence, vote_shares

__all__ = ["fit_difficulty", "vote_log_likelihood"]

#: Prior means of a worker's ability α_w and a query's log easiness b_i (both with s.d. 1): crowd-kit's.
ALPHA_MEAN, EASINESS_MEAN = 1.0, 1.0
#: Gauss–Hermite nodes of the integral over a left-out query's easiness (:func:`vote_log_likelihood`).
NODES = 24
#: L-BFGS iterations of (α, b) in each M-step.
M_STEP_ITER = 25
PATTERNS = ("crowd", "even")


@dataclass(frozen=True)
class DifficultyFit:
    """A GLAD fit: ``posteriors`` [N × K], ``priors`` [K], ``alpha`` [W], ``easiness`` β [N] (> 0),
    ``pattern`` E [K × K] (rows: true label; the diagonal 0), ``log_likelihood`` of the votes."""

    posteriors: np.ndarray
    priors: np.ndarray
    alpha: np.ndarray
    easiness: np.ndarray
    pattern: np.ndarray
    log_likelihood: float
    iterations: int
    converged: bool
    #: The prior mean of the log easiness b_i (estimated: the mean over the queries in the fit, unless fixed).
    easiness_mean: float = EASINESS_MEAN


def _answer_log_rows(x: np.ndarray, pattern: np.ndarray, label_idx: np.ndarray) -> np.ndarray:
    """[J × K]: log P(answer g_j | T = t) for each answer with logit x_j = α_w β_i."""
    k = pattern.shape[0]
    log_right = -np.logaddexp(0.0, -x)  # log σ(x)
    log_wrong = -np.logaddexp(0.0, x)  # log (1 − σ(x))
    right = np.eye(k)[label_idx].astype(bool)  # [J × K]: t = g_j
    wrong = log_wrong[:, None] + np.log(np.maximum(pattern[:, label_idx].T, FLOOR))
    return np.where(right, log_right[:, None], wrong)


def _posteriors(log_rows: np.ndarray, priors: np.ndarray, encoded: Encoded, by_item_t) -> tuple[np.ndarray, float]:
    summed = np.asarray(by_item_t @ log_rows) + np.log(priors)[None, :]
    peak = summed.max(axis=1, keepdims=True)
    unnormalised = np.exp(summed - peak)
    norm = unnormalised.sum(axis=1, keepdims=True)
    return _fix_gold((unnormalised / norm)[None], encoded)[0], float((np.log(norm) + peak).sum())


def _pattern(posteriors: np.ndarray, encoded: Encoded, weight: np.ndarray, how: str) -> np.ndarray:
    k = len(encoded.labels)
    off = 1.0 - np.eye(k)
    if how == "even":
        return off / (k - 1)
    counts = np.zeros((k, k))
    np.add.at(counts.T, encoded.label_idx, posteriors[encoded.item_idx] * weight[:, None])
    cells = counts * off + PATTERN_PRIOR * off
    return cells / cells.sum(axis=1, keepdims=True)


def _ability_step(alpha, b, right, weight, encoded: Encoded, mean: float) -> tuple[np.ndarray, np.ndarray]:
    """(α, b) maximising Σ_j m_i [r_j log σ(α_w β_i) + (1 − r_j) log(1 − σ(α_w β_i))] + their log priors."""
    from scipy.optimize import minimize

    w_idx, i_idx = encoded.worker_idx, encoded.item_idx
    n_w = encoded.n_workers

    def negative(z: np.ndarray) -> tuple[float, np.ndarray]:
        a, e = z[:n_w], z[n_w:]
        beta = np.exp(e)
        x = a[w_idx] * beta[i_idx]
        value = weight * (right * -np.logaddexp(0.0, -x) + (1.0 - right) * -np.logaddexp(0.0, x))
        residual = weight * (right - 1.0 / (1.0 + np.exp(-x)))  # dQ/dx
        grad_a = np.bincount(w_idx, residual * beta[i_idx], n_w) - (a - ALPHA_MEAN)
        grad_e = np.bincount(i_idx, residual * x, encoded.n_items) - (e - mean)
        objective = value.sum() - 0.5 * ((a - ALPHA_MEAN) ** 2).sum() - 0.5 * ((e - mean) ** 2).sum()
        return -objective, -np.concatenate([grad_a, grad_e])

    result = minimize(
        negative, np.concatenate([alpha, b]), jac=True, method="L-BFGS-B", options={"maxiter": M_STEP_ITER}
    )
    return result.x[:n_w], result.x[n_w:]


def fit_difficulty(
    encoded: Encoded,
    weights: np.ndarray | None = None,
    *,
    pattern: str = "crowd",
    priors: np.ndarray | None = None,
    easiness_mean: float | None = None,
    max_iter: int = 100,
    tol: float = 1e-6,
) -> DifficultyFit:
    """GLAD by EM on coded judgments; ``weights`` [N]: multiplicities (0: left out, a held-out fold); ``priors``
    [K]: fixed class shares or None (estimated); ``easiness_mean``: fixed, or None (empirical Bayes, so a crowd
    whose queries are all hard or all easy is not read against 1). Stops at a relative change of ``tol``."""
    if pattern not in PATTERNS:
        raise ValueError(f"pattern {pattern!r}: expected one of {', '.join(PATTERNS)}")
    m = np.ones(encoded.n_items) if weights is None else np.asarray(weights, dtype=np.float64)
    weight = m[encoded.item_idx]
    by_item, _ = _incidence(encoded)
    by_item_t = by_item.T.tocsr()
    posteriors = vote_shares(encoded)
    alpha = np.full(encoded.n_workers, ALPHA_MEAN)
    mean = EASINESS_MEAN if easiness_mean is None else float(easiness_mean)
    b = np.full(encoded.n_items, mean)
    previous, converged, iterations = -np.inf, False, 0
    for iterations in range(1, max_iter + 1):  # noqa: B007 -- the count is reported
        if priors is None:
            classes = (posteriors * m[:, None]).sum(axis=0) + CLASS_PRIOR
            shares = classes / classes.sum()
        else:
            shares = np.asarray(priors, dtype=np.float64)
        errors = _pattern(posteriors, encoded, weight, pattern)
        right = posteriors[encoded.item_idx, encoded.label_idx]
        alpha, b = _ability_step(alpha, b, right, weight, encoded, mean)
        if easiness_mean is None:
            mean = float(b[m > 0].mean())
        x = alpha[encoded.worker_idx] * np.exp(b[encoded.item_idx])
        posteriors, log_likelihood = _posteriors(
            _answer_log_rows(x, errors, encoded.label_idx), shares, encoded, by_item_t
        )
        if abs(log_likelihood - previous) <= tol * max(1.0, abs(log_likelihood)):
            converged = True
            break
        previous = log_likelihood
    return DifficultyFit(posteriors, shares, alpha, np.exp(b), errors, log_likelihood, iterations, converged, mean)


def vote_log_likelihood(fitted: DifficultyFit, encoded: Encoded, *, nodes: int = NODES) -> np.ndarray:
    """[N]: each query's log ∫ Σ_t π_t Π_j P(g_j | t, α_w, e^b) N(b; b̄, 1) db by Gauss–Hermite, its easiness
    unknown: how a query the fit did not see is scored (:func:`.model_choice.choose_difficulty`)."""
    points, node_weights = np.polynomial.hermite_e.hermegauss(nodes)
    log_w = np.log(node_weights / node_weights.sum())
    by_item, _ = _incidence(encoded)
    by_item_t = by_item.T.tocsr()
    out = np.empty((nodes, encoded.n_items))
    for q, point in enumerate(points):
        x = fitted.alpha[encoded.worker_idx] * np.exp(fitted.easiness_mean + point)
        summed = np.asarray(by_item_t @ _answer_log_rows(x, fitted.pattern, encoded.label_idx))
        summed += np.log(fitted.priors)[None, :]
        peak = summed.max(axis=1, keepdims=True)
        out[q] = (np.log(np.exp(summed - peak).sum(axis=1, keepdims=True)) + peak)[:, 0] + log_w[q]
    peak = out.max(axis=0)
    return np.log(np.exp(out - peak).sum(axis=0)) + peak

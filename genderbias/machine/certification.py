"""Routing's guarantee: the lowest confidence threshold whose accepted set is certified at least as accurate as asked.

Pure numpy. The statement, the candidates (:func:`candidate_thresholds`), the fixed-sequence testing with its
exact test of the first draw (at δ₁ = ``EXACT_SHARE``·δ) and betting test of every sample item (at δ − δ₁, Kelly's
bet shrunk by ``_PRIOR_ITEMS``, capped by ``_LAMBDA_CAP``) and why they hold: docs/prelabelling.md, "The guarantee,
exactly", whose names (P, A_t, K_t, k_t, N_t, n_t, ε_i, M_i) the code uses. An item without a crowd label counts
as wrong in both tests (a rejection then stands on the complete labels).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from genderbias.machine.routing_statistics import TOLERANCE, _arrays, tied

__all__ = [
    "DEFAULT_RISK", "MAX_CANDIDATES", "NOT_EXTENDABLE", "Certification", "candidate_thresholds", "certify_threshold",
    "null_errors", "perfect_record",
]  # fmt: skip

# --- the guarantee: fixed-sequence testing with a betting test per threshold ---------------

#: Default risk δ: the probability that the chosen accepted set falls short of the target.
DEFAULT_RISK = 0.05
#: At most this many candidate thresholds (population quantiles beyond it).
MAX_CANDIDATES = 20
#: The first candidate's accepted set is expected to hold this many times the items a perfect
#: record needs to pass (see :func:`candidate_thresholds`).
START_FACTOR = 1.5
#: Pseudo-items of the running error rate's shrinkage (towards half the allowed error rate).
_PRIOR_ITEMS = 10.0
#: λ never stakes more than this share of what a wrong item could cost.
_LAMBDA_CAP = 0.9
#: δ₁ / δ: the share of the risk spent on the exact test of the first draw (the rest on betting).
EXACT_SHARE = 0.8


#: Why more sample queries cannot help a sample drawn whole (``more_reason``).
NOT_EXTENDABLE = (
    "the sample was drawn whole (not extendable): all of the risk went to the exact test of its one draw, so "
    "more sample queries could not be tested; extending cannot help"
)


@dataclass(frozen=True)
class Certification:
    """The threshold the fixed-sequence test certifies (None: none), with every candidate's test."""

    threshold: float | None  #: lowest certified confidence; None: no threshold could be certified
    target: float
    risk: float
    accepted_population: int  #: |A_t| at the chosen threshold (0 without one)
    sample_accepted: int  #: sample items at or above it
    observed_accuracy: float | None  #: share right among those sample items
    #: threshold, population, sample_accepted, sample_errors, observed_accuracy, exact_p, capital, passed, tested
    candidates: list[dict]
    first_failure: dict | None  #: the candidate where testing stopped (None: every candidate passed)
    more_needed: int | None  #: more sample queries the first failure needs at its observed accuracy; None: cannot
    more_reason: str  #: why ``more_needed`` is what it is, in words


@lru_cache(maxsize=64)
def perfect_record(target: float, risk: float, extendable: bool = True) -> int:
    """The fewest sample items, all right, with which a threshold can pass (of a large accepted set):
    the exact test at δ₁ (A^n ≤ δ₁) or, for an extendable sample, the betting test at δ − δ₁,
    whichever needs fewer (:func:`_split`)."""
    length = 100_000
    betting_risk, exact_risk = _split(risk, extendable)
    betting = length
    if betting_risk > 0:
        path = _log_path(
            np.ones((1, length), dtype=bool),
            np.zeros(length),
            np.array([1e12]),
            null_errors(np.array([1e12]), target),
            target,
        )
        enough = np.flatnonzero(path[0] >= np.log(1 / betting_risk) - TOLERANCE)
        betting = int(enough[0]) + 1 if len(enough) else length
    exact = math.ceil(math.log(exact_risk) / math.log(target) - 1e-9) if target < 1 else length
    return min(betting, exact, length)


def _split(risk: float, extendable: bool = True) -> tuple[float, float]:
    """(δ − δ₁, δ₁): the betting and exact tests' shares of δ (all to the exact test unless ``extendable``)."""
    if not extendable:
        return 0.0, risk
    return (1 - EXACT_SHARE) * risk, EXACT_SHARE * risk


def _exact_pvalues(mask: np.ndarray, errors: np.ndarray, population: np.ndarray, k0: np.ndarray) -> np.ndarray:
    """Exact p-value of H0_t on the first draw, ``[..., T]``: P(E ≤ e_t), E ~ Hypergeometric(N_t, k_t, n_t)
    (1 without items); valid because under H0_t e_t is stochastically at least that hypergeometric."""
    from scipy.stats import hypergeom

    n_t = mask.sum(axis=-1)
    e_t = (mask * errors[..., None, :]).sum(axis=-1)
    size = np.broadcast_to(population.astype(np.int64), n_t.shape)
    bad = np.broadcast_to(np.minimum(k0, population).astype(np.int64), n_t.shape)
    with np.errstate(invalid="ignore"):
        p = hypergeom.cdf(e_t, size, bad, n_t)
    impossible = np.broadcast_to(k0 > population, n_t.shape)  # H0_t cannot hold: nothing to refute
    return np.where(impossible, 0.0, np.where(n_t > 0, np.nan_to_num(p, nan=1.0), 1.0))


def _passes(mask, errors, population, k0, target, risk, planned, extendable=True):
    """Per threshold: the exact p-value of the first ``planned`` items, sup log M over every item,
    and whether the combined test rejects H0_t (exact p ≤ δ₁ or sup M ≥ 1/(δ − δ₁)); a sample
    drawn whole (not ``extendable``): the exact test at δ alone (sup log M is still shown)."""
    betting_risk, exact_risk = _split(risk, extendable)
    exact = _exact_pvalues(mask[..., :planned], errors[..., :planned], population, k0)
    capital = _log_capital(mask, errors, population, k0, target)
    passed = exact <= exact_risk + TOLERANCE
    if betting_risk > 0:
        passed = passed | (capital >= np.log(1 / betting_risk) - TOLERANCE)
    return exact, capital, passed


def candidate_thresholds(
    population_confidence: Sequence[float],
    planned: int,
    *,
    target: float,
    risk: float,
    max_candidates: int = MAX_CANDIDATES,
    extendable: bool = True,
) -> np.ndarray:
    """The thresholds to test, most confident first, from the population's confidences, ``planned`` and the rule's
    parameters only (so the same however the sample falls): every distinct confidence (at most ``max_candidates``,
    else population quantiles), from the first accepted set expected to hold :data:`START_FACTOR` ×
    :func:`perfect_record` sample items (a smaller one cannot pass and would stop every lower one) to the lowest.
    """
    c = np.sort(tied(population_confidence))[::-1]
    if len(c) == 0:
        return c
    distinct = np.unique(c)[::-1]
    if len(distinct) > max_candidates:
        positions = np.ceil(np.arange(1, max_candidates + 1) * len(c) / max_candidates).astype(int) - 1
        distinct = np.unique(c[positions])[::-1]
    sizes = (c[None, :] >= distinct[:, None]).sum(axis=1)
    expected = planned * sizes / len(c)
    big_enough = expected >= START_FACTOR * perfect_record(target, risk, extendable)
    big_enough[-1] = True
    return distinct[np.argmax(big_enough) :]


def null_errors(accepted: np.ndarray, target: float) -> np.ndarray:
    """k_t = ⌊(1 − A)·N_t⌋ + 1: the fewest errors at which an accepted set of N_t misses A."""
    return np.floor((1 - target) * np.asarray(accepted, dtype=float) + 1e-9) + 1


def _log_capital(mask: np.ndarray, errors: np.ndarray, population: np.ndarray, k0: np.ndarray, target: float):
    """The running maximum of the betting test's log-capital (0 at the start), ``[..., T]``."""
    return np.maximum(_log_path(mask, errors, population, k0, target).max(axis=-1, initial=-np.inf), 0.0)


def _fixed_sequence(passed: np.ndarray) -> np.ndarray:
    """Index of the last candidate of the leading run of passes (−1: the first failed), per row."""
    return np.cumprod(passed, axis=-1).sum(axis=-1) - 1


def certify_threshold(
    sample_confidence: Sequence[float],
    sample_correct: Sequence[bool],
    population_confidence: Sequence[float],
    *,
    target: float,
    risk: float = DEFAULT_RISK,
    planned: int | None = None,
    max_candidates: int = MAX_CANDIDATES,
    pending: int = 0,
    extendable: bool = True,
) -> Certification:
    """The lowest threshold certified by fixed-sequence testing. ``sample_confidence``/``sample_correct``: the blind
    sample *in draw order* (unlabelled = not correct); ``population_confidence``: every routable query's, sample
    included; ``planned``: the first draw's size (default: the sample's). While ``pending`` sample items await the
    crowd nothing is certified. ``extendable=False``: drawn whole, so more sample queries cannot help.
    """
    if not 0 < target <= 1:
        raise ValueError(f"target must be in (0, 1], got {target}")
    if not 0 < risk < 1:
        raise ValueError(f"risk must be between 0 and 1, got {risk}")
    c, ok, _ = _arrays(sample_confidence, sample_correct, None)
    population = tied(population_confidence)
    if len(c) == 0:
        raise ValueError("no sample items: a threshold needs human-labelled items to be certified from")
    if len(population) < len(c) or not np.all((population >= 0) & (population <= 1)):
        raise ValueError("the population's confidences must be in [0, 1] and include the sample's")
    planned = planned or len(c)
    thresholds = candidate_thresholds(
        population, planned, target=target, risk=risk, max_candidates=max_candidates, extendable=extendable
    )
    sizes = (population[None, :] >= thresholds[:, None]).sum(axis=1).astype(float)
    k0 = null_errors(sizes, target)
    mask = c[None, :] >= thresholds[:, None]
    errors = 1 - ok
    exact, capital, passed = _passes(mask, errors, sizes, k0, target, risk, planned, extendable)
    last = int(_fixed_sequence(passed))
    accepted = mask.sum(axis=1)
    wrong = (mask * errors).sum(axis=1)
    candidates = [
        {
            "threshold": float(thresholds[j]),
            "population": int(sizes[j]),
            "sample_accepted": int(accepted[j]),
            "sample_errors": int(wrong[j]),
            "observed_accuracy": float(1 - wrong[j] / accepted[j]) if accepted[j] else None,
            "exact_p": float(exact[j]),
            "capital": float(np.exp(min(capital[j], 700.0))),
            "passed": bool(passed[j]),
            "tested": j <= last + 1,
        }
        for j in range(len(thresholds))
    ]
    if pending < 0:
        raise ValueError(f"pending must not be negative, got {pending}")
    failure = candidates[last + 1] if last + 1 < len(candidates) else None
    if failure is None:
        more, reason = None, "every candidate passed"
    elif not extendable:
        more, reason = None, NOT_EXTENDABLE
    else:
        more, reason = _more_needed(c, errors, population, thresholds[last + 1], target, _split(risk)[0])
    if pending > 0:
        last = -1
        more, reason = (
            None,
            (
                f"{pending} sample {'query' if pending == 1 else 'queries'} still pending (no crowd label yet): "
                "nothing is certified until the crowd has answered the whole sample"
            ),
        )
    chosen = candidates[last] if last >= 0 else None
    return Certification(
        threshold=chosen["threshold"] if chosen else None,
        target=target,
        risk=risk,
        accepted_population=chosen["population"] if chosen else 0,
        sample_accepted=chosen["sample_accepted"] if chosen else 0,
        observed_accuracy=chosen["observed_accuracy"] if chosen else None,
        candidates=candidates,
        first_failure=failure,
        more_needed=more,
        more_reason=reason,
    )


def _more_needed(
    c: np.ndarray, errors: np.ndarray, population: np.ndarray, threshold: float, target: float, risk: float
) -> tuple[int | None, str]:
    """How many more sample queries ``threshold`` needs to pass at its observed error rate p̂.

    Only the betting test (at ``risk`` = δ − δ₁) uses further items. It is run on the observed items followed
    by the expected continuation (errors spread evenly at p̂); new sample queries fall in A_t at the rate
    |A_t \\ sample| / |P \\ sample|, so the answer is the items needed over that rate.
    """
    inside = c >= threshold
    n_t, wrong = int(inside.sum()), float(errors[inside].sum())
    size = int((population >= threshold).sum())
    rest, rest_all = size - n_t, len(population) - len(c)
    observed = 1 - wrong / n_t if n_t else None
    if observed is not None and observed < target:
        return None, (
            f"its observed accuracy {observed:.3f} is below the target {target}: more sample queries would not "
            "certify it at that accuracy"
        )
    if rest <= 0:
        return None, "every query at or above it is in the sample already"
    rate = (wrong + _PRIOR_ITEMS * (1 - target) / 2) / (n_t + _PRIOR_ITEMS) if n_t == 0 else wrong / n_t
    j = np.arange(1, rest + 1)
    future = (np.floor(j * rate) - np.floor((j - 1) * rate)).astype(float)
    sequence = np.concatenate([errors[inside], future])
    k0 = null_errors(np.array([size]), target)
    every = np.ones((1, len(sequence)), dtype=bool)  # one threshold, every item in A_t
    path = np.maximum.accumulate(_log_path(every, sequence, np.array([float(size)]), k0, target)[0])
    enough = np.flatnonzero(path[n_t:] >= np.log(1 / risk) - TOLERANCE)
    if len(enough) == 0:
        return None, (
            f"at its observed accuracy ({'none yet' if observed is None else f'{observed:.3f}'}) even sampling all "
            f"{size} queries at or above it would not certify it"
        )
    items = int(enough[0]) + 1
    share = rest / rest_all
    more = int(np.ceil(items / share))
    return min(more, rest_all), (
        f"about {min(more, rest_all)} more sample queries (≈{items} of them at or above {threshold:.3f}) at its "
        f"observed accuracy {'(none yet)' if observed is None else f'{observed:.3f}'}"
    )


def _log_path(mask: np.ndarray, errors: np.ndarray, population: np.ndarray, k0: np.ndarray, target: float):
    """The betting test's log M_i after each sample item, per threshold (docs/prelabelling.md).

    ``mask`` ``[..., T, n]``: item i (draw order) is in A_t; ``errors`` ``[..., n]``: 1 wrong or unlabelled;
    ``population`` and ``k0`` ``[T]``: N_t and k_t. Items outside A_t leave the capital as it is.
    """
    m = mask.astype(float)
    x = errors[..., None, :] * m
    previous = np.cumsum(m, axis=-1) - m
    seen_errors = np.cumsum(x, axis=-1) - x
    allowed = 1 - target
    with np.errstate(divide="ignore", invalid="ignore"):
        eps = (k0[:, None] - seen_errors) / (population[:, None] - previous)
        p_hat = (seen_errors + _PRIOR_ITEMS * allowed / 2) / (previous + _PRIOR_ITEMS)
        inside = (eps > 0) & (eps < 1)
        safe = np.where(inside, eps, 0.5)
        lam = np.clip((safe - p_hat) / (safe * (1 - safe)), 0, _LAMBDA_CAP / (1 - safe))
        factor = np.where(inside, 1 + lam * (safe - x), 1.0)
        factor = np.where((eps >= 1) & (x == 0), np.inf, factor)
        log_factor = np.where(m > 0, np.log(factor), 0.0)
    return np.cumsum(log_factor, axis=-1)

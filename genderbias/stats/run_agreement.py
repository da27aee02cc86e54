"""Do the query sets agree on which runs are fairer? Each set's ranking of the same runs by one metric, and
Kendall's τ-b between every two sets' orders (``scipy.stats.kendalltau``'s statistic), with a bootstrap interval.
Pure (numpy).

A set's value of a run is its mean over the set's queries every compared run returns; the order puts the fairest
first by the metric's direction (:mod:`genderbias.ranking.vocabulary`), ties in values being ties in order. The
interval is a percentile bootstrap redrawing every set's queries independently (a query two sets share is
redrawn in each, so slightly wide). With few systems τ takes few values (steps of 0.2 with 5), so it is coarse.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from genderbias.ranking.defaults import LEVEL
from genderbias.ranking.vocabulary import BETTER, BY_NAME, HIGHER, LOWER, TOWARDS_ZERO

__all__ = ["SetValues", "compare_sets", "kendall_tau_b"]


@dataclass
class SetValues:
    """A set's per-query values of the compared systems: ``values[q, s]``, queries × systems."""

    name: str
    qids: list[str]
    values: np.ndarray
    #: queries of the set left out because some compared run lacks a value for them
    left_out: int = 0


def orientate(means: np.ndarray, direction: str) -> np.ndarray:
    """Values with higher = fairer (better), whatever the metric's direction."""
    if direction == TOWARDS_ZERO:
        return -np.abs(means)
    if direction == LOWER:
        return -means
    if direction in (HIGHER, BETTER):
        return means
    raise ValueError(f"unknown direction {direction!r}")


def direction_of(metric: str) -> str:
    if metric not in BY_NAME:
        raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(BY_NAME)}")
    return BY_NAME[metric].direction


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's τ-b along the last axis (leading axes: replicates) as Σ sign(Δx)·sign(Δy) /
    √(Σ sign(Δx)² · Σ sign(Δy)²) over pairs of systems; NaN when either has no untied pair."""
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    i, j = np.triu_indices(x.shape[-1], k=1)
    sx, sy = np.sign(x[..., i] - x[..., j]), np.sign(y[..., i] - y[..., j])
    denominator = np.sqrt((sx**2).sum(axis=-1) * (sy**2).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, (sx * sy).sum(axis=-1) / np.where(denominator > 0, denominator, 1), np.nan)


def _bootstrap_means(values: np.ndarray, samples: int, rng: np.random.Generator) -> np.ndarray:
    """``samples`` × systems means over queries redrawn with replacement (multinomial counts)."""
    n = values.shape[0]
    counts = rng.multinomial(n, np.full(n, 1.0 / n), size=samples).astype(np.float64)
    return counts @ values / n


def order_of(systems: Sequence[str], keys: np.ndarray) -> list[str]:
    """The systems fairest first (equal keys keep the given order)."""
    return [systems[k] for k in sorted(range(len(systems)), key=lambda k: -keys[k])]


def compare_sets(
    sets: Sequence[SetValues],
    systems: Sequence[str],
    metric: str,
    *,
    samples: int = 1000,
    seed: int = 0,
    level: float = LEVEL,
) -> dict:
    """Each set's ranking of ``systems`` and τ between every two sets, with bootstrap intervals, as plain JSON:
    ``sets`` (``name, queries, left_out, order, runs``: each system's ``mean, ci, rank``), ``pairs`` (``a, b, tau,
    ci, draws_below_zero``) and ``mean_tau``."""
    if len(sets) < 2:
        raise ValueError("compare at least two sets")
    if len(systems) < 2:
        raise ValueError("compare at least two runs")
    direction = direction_of(metric)
    streams = np.random.SeedSequence(seed).spawn(len(sets))
    alpha = (1 - level) / 2
    described, keys, replicates = [], [], []
    for values, stream in zip(sets, streams, strict=True):
        if values.values.shape[0] == 0:
            raise ValueError(f"{values.name}: no query every compared run returns")
        means = values.values.mean(axis=0)
        draws = _bootstrap_means(values.values, samples, np.random.default_rng(stream))
        key = orientate(means, direction)
        keys.append(key)
        replicates.append(orientate(draws, direction))
        order = order_of(systems, key)
        low, high = np.quantile(draws, [alpha, 1 - alpha], axis=0)
        described.append(
            {
                "name": values.name,
                "queries": int(values.values.shape[0]),
                "left_out": int(values.left_out),
                "order": order,
                "runs": [
                    {
                        "system": system,
                        "mean": float(means[s]),
                        "ci": [float(low[s]), float(high[s])],
                        "rank": order.index(system) + 1,
                    }
                    for s, system in enumerate(systems)
                ],
            }
        )
    pairs = []
    for a in range(len(sets)):
        for b in range(a + 1, len(sets)):
            tau = float(kendall_tau_b(keys[a], keys[b]))
            draws = kendall_tau_b(replicates[a], replicates[b])
            draws = draws[~np.isnan(draws)]
            ci = [float(v) for v in np.quantile(draws, [alpha, 1 - alpha])] if len(draws) else [None, None]
            pairs.append(
                {
                    "a": sets[a].name,
                    "b": sets[b].name,
                    "tau": None if np.isnan(tau) else tau,
                    "ci": ci,
                    "draws_below_zero": float((draws < 0).mean()) if len(draws) else None,
                }
            )
    taus = [p["tau"] for p in pairs if p["tau"] is not None]
    return {
        "metric": metric,
        "direction": direction,
        "level": level,
        "samples": samples,
        "seed": seed,
        "systems": list(systems),
        "sets": described,
        "pairs": pairs,
        "mean_tau": float(np.mean(taus)) if taus else None,
    }

"""Rank bias of a run, per query: RaB@t and ARaB@t (Rekabsaz & Schedl, SIGIR 2020).

For a query with ranked documents d_1..d_n and gender magnitudes mag_f, mag_m:

- RaB@t  = mean over r ≤ min(t, n) of (mag_m(d_r) − mag_f(d_r)); positive leans male;
- ARaB@t = mean of RaB@1 … RaB@min(t, n).

Computed for all queries and cutoffs at once from a dense [queries × ranks] matrix and
cumulative sums: no Python loop per query.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from genderbias.ranking.ranked_counts import RankedCounts, tie_view, with_ties
from genderbias.text.magnitudes import magnitude

__all__ = ["rank_bias_of", "rank_bias_ranges"]


def rank_bias_of(matrix: np.ndarray, n: np.ndarray, cutoffs: Sequence[int]) -> dict[str, np.ndarray]:
    """RaB@t, ARaB@t and ``n`` from ``[queries × depth]`` values and each query's documents: the one arithmetic of
    RaB/ARaB, for the pool and the report (whose per-rank values may be expectations over orders of ties)."""
    depth = matrix.shape[1]
    ranks = np.arange(1, depth + 1)
    rab_at = np.cumsum(matrix, axis=1) / ranks  # RaB@r for r = 1..depth, assuming r ≤ n
    arab_sum = np.cumsum(rab_at, axis=1)
    columns = {}
    rows = np.arange(len(n))
    for t in cutoffs:
        k = np.minimum(t, n)  # ≥ 1 for every query present in the run
        columns[f"RaB@{t}"] = rab_at[rows, k - 1]
        columns[f"ARaB@{t}"] = arab_sum[rows, k - 1] / k
    columns["n"] = np.minimum(n, depth) if len(n) else n
    return columns


def rank_bias_ranges(
    ranked: RankedCounts,
    run: pl.DataFrame,
    counts: pl.DataFrame,
    cutoffs: Sequence[int],
    variant: str,
    tied: RankedCounts | None = None,
) -> dict[str, np.ndarray]:
    """RaB@t, ARaB@t and ``n`` of ``ranked`` (:func:`genderbias.ranking.ranked_counts.ranked_counts` of ``run`` and
    ``counts``) with ``tf`` or ``bool`` magnitudes, their range over the orders of ties (``RaB@t:low`` …) and
    ``tied@t``: the report's and the pool's RaB, without pandas (the pool's command does not load it)."""
    values = _per_rank_differences(ranked, variant)
    columns = rank_bias_of(ranked.per_rank(values), ranked.n, cutoffs)
    tied = tied or tie_view(ranked, run, counts)
    low, high = tied.extremes(values if tied is ranked else _per_rank_differences(tied, variant))
    lowest, highest = rank_bias_of(low, tied.n, cutoffs), rank_bias_of(high, tied.n, cutoffs)
    linear = {name: (lowest[name], highest[name]) for name in columns if name != "n"}
    return with_ties(columns, tied, cutoffs, linear)


def _per_rank_differences(ranked: RankedCounts, variant: str) -> np.ndarray:
    """``mag_m − mag_f`` at every rank of ``ranked``'s width, from the counts it already holds (0 past n or for a
    document without counts, as :func:`genderbias.text.magnitudes.magnitude` of 0 is)."""
    counts = ranked.full if ranked.full is not None else {"f": ranked.f, "m": ranked.m}
    return magnitude(counts["m"], variant) - magnitude(counts["f"], variant)

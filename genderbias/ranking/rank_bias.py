"""Rank bias of a run, per query: RaB@t and ARaB@t (Rekabsaz & Schedl, SIGIR 2020).

For a query with ranked documents d_1..d_n and gender magnitudes mag_f, mag_m:

- RaB@t  = mean over r ≤ min(t, n) of (mag_m(d_r) − mag_f(d_r)); positive leans male;
- ARaB@t = mean of RaB@1 … RaB@min(t, n).

Computed for all queries and cutoffs at once from a dense [queries × ranks] matrix and
cumulative sums: no Python loop per query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from genderbias.ranking.ranked_counts import RankedCounts, rank_matrices, tie_view, with_ties
from genderbias.text.magnitudes import magnitude

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["rank_bias_columns", "rank_bias_columns_by_run", "rank_bias_of", "rank_bias_ranges", "rank_bias_table"]


def rank_bias_columns(
    run: pl.DataFrame, magnitudes: pl.DataFrame, cutoffs: Sequence[int]
) -> tuple[list[str], dict[str, np.ndarray]]:
    """``(qids, columns)``: RaB@t and ARaB@t per cutoff and ``n`` for every query of ``run``, from ``magnitudes``
    (``docid, f, m`` of one magnitude variant)."""
    depth = _depth(cutoffs)
    qids, matrices, n = rank_matrices(run, _differences(magnitudes), depth)
    return qids, rank_bias_of(matrices["value"], n, cutoffs)


def rank_bias_columns_by_run(
    runs: Mapping[str, pl.DataFrame], magnitudes: pl.DataFrame, cutoffs: Sequence[int]
) -> dict[str, tuple[list[str], dict[str, np.ndarray]]]:
    """:func:`rank_bias_columns` of every run (name → ``(qids, columns)``), joined to the magnitudes at once."""
    depth = _depth(cutoffs)
    if not runs:
        return {}
    tops = pl.concat(
        run.select("qid", "docid", "rank", pl.lit(i, dtype=pl.UInt32).alias("run")).filter(pl.col("rank") <= depth)
        for i, run in enumerate(runs.values())
    )
    joined = tops.join(_differences(magnitudes), on="docid", how="left", maintain_order="left")
    union = joined["qid"].unique(maintain_order=True)
    joined = joined.join(union.to_frame().with_row_index("code"), on="qid", how="left", maintain_order="left")
    union_qids = union.to_list()
    codes = joined["code"].to_numpy().astype(np.int64)
    cols = joined["rank"].to_numpy().astype(np.int64) - 1
    data = joined["value"].fill_null(0).cast(pl.Float64).to_numpy()
    bounds = np.searchsorted(joined["run"].to_numpy(), np.arange(len(runs) + 1))  # runs are in order
    row_of = np.empty(len(union_qids), dtype=np.int64)
    result = {}
    for i, name in enumerate(runs):
        part = slice(bounds[i], bounds[i + 1])
        found, first = np.unique(codes[part], return_index=True)
        present = found[np.argsort(first)]  # the run's queries in order of first appearance
        row_of[present] = np.arange(len(present))
        rows = row_of[codes[part]]
        matrix = np.zeros((len(present), depth), dtype=np.float64)
        matrix[rows, cols[part]] = data[part]
        n = np.bincount(rows, minlength=len(present))
        result[name] = ([union_qids[code] for code in present.tolist()], rank_bias_of(matrix, n, cutoffs))
    return result


def _depth(cutoffs: Sequence[int]) -> int:
    if not cutoffs or min(cutoffs) < 1:
        raise ValueError("cutoffs must be positive integers")
    return max(cutoffs)


def _differences(magnitudes: pl.DataFrame) -> pl.DataFrame:
    """``docid, value``: each passage's ``m − f``, the value RaB averages."""
    return magnitudes.select("docid", (pl.col("m") - pl.col("f")).cast(pl.Float64).alias("value"))


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


def rank_bias_table(run: pl.DataFrame, magnitudes: pl.DataFrame, cutoffs: Sequence[int]) -> pd.DataFrame:
    """:func:`rank_bias_columns` as a pandas frame indexed by ``qid`` (for the metrics' tables)."""
    import pandas as pd

    qids, columns = rank_bias_columns(run, magnitudes, cutoffs)
    return pd.DataFrame(columns, index=pd.Index(qids, name="qid"))


def _per_rank_differences(ranked: RankedCounts, variant: str) -> np.ndarray:
    """``mag_m − mag_f`` at every rank of ``ranked``'s width, from the counts it already holds (0 past n or for a
    document without counts, as :func:`genderbias.text.magnitudes.magnitude` of 0 is)."""
    counts = ranked.full if ranked.full is not None else {"f": ranked.f, "m": ranked.m}
    return magnitude(counts["m"], variant) - magnitude(counts["f"], variant)

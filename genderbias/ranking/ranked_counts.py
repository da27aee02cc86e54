"""A run's top documents with their word counts as dense ``[queries × depth]`` matrices: the input of every measure.

Pure; one pass of cumulative sums per run, no Python loop per query. Inputs: ``run`` (``qid, docid, rank``), its
documents ranked ≤ the largest cutoff renumbered 1, 2, …; ``counts`` (``docid, f, m, length``) under one word list
and tokenizer, a document missing from them having no gendered word and length 0.

Tied documents are ordered by ``ties`` (:mod:`genderbias.ranking.ties`): under ``tie-aware`` (default) every
figure is its expectation over all orders of each tie group, with its range over them (``name:low``,
``name:high``) and ``tied@k``. A linear measure takes its range from :meth:`RankedCounts.extremes`; a non-linear
one is averaged over :func:`tie_arrangements` by :func:`genderbias.ranking.measures.over_orders`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from genderbias.ranking.defaults import CUTOFFS_RULE, DEFAULT_TIES, TIE_DRAWS
from genderbias.ranking.ties import (
    TIE_AWARE,
    Orders,
    extreme_values,
    group_matrix,
    group_means,
    order_run,
    tie_orders,
    tied_within,
)

__all__ = [
    "RankedCounts", "dense", "discounts", "qid_index", "rank_matrices", "ranked_counts", "tie_arrangements", "tie_view",
    "validate_cutoffs", "with_ties",
]  # fmt: skip


def validate_cutoffs(cutoffs: Sequence[int]) -> list[int]:
    """Sorted distinct cutoffs, or ``ValueError``: the cutoffs' one check
    (:data:`genderbias.ranking.defaults.CUTOFFS_RULE`)."""
    return list(CUTOFFS_RULE.check(cutoffs))


def discounts(depth: int) -> np.ndarray:
    """Position weights w_r = 1/log2(r + 1) for r = 1..depth (the DCG discount)."""
    return 1.0 / np.log2(np.arange(2, depth + 2, dtype=np.float64))


@dataclass(frozen=True)
class RankedCounts:
    """Counts of a run's top documents as ``[queries × depth]`` matrices (0 past rank n).

    Under ``tie-aware`` (:mod:`genderbias.ranking.ties`) ``groups`` numbers each query's tie groups and
    ``full`` holds the counts over ``width`` ≥ depth ranks: the members of a group that straddles
    the depth too, which the expectation averages over.
    """

    qids: list[str]
    n: np.ndarray  # documents per query within depth
    f: np.ndarray
    m: np.ndarray
    length: np.ndarray
    found: np.ndarray  # bool: the document has counts (is in the collection)
    ordered: pl.DataFrame | None = None  # qid, docid, rank, group (:func:`genderbias.ranking.ties.order_run`)
    groups: np.ndarray | None = None  # [queries × width] tie groups; None: ties are not averaged over
    full: dict | None = None  # f, m, length, found over the width
    n_full: np.ndarray | None = None

    @property
    def depth(self) -> int:
        return self.f.shape[1]

    @property
    def tie_aware(self) -> bool:
        return self.groups is not None

    def at(self, matrix: np.ndarray, cutoff: int) -> np.ndarray:
        """Column ``min(cutoff, depth)`` of a cumulative matrix, i.e. the value at rank min(k, n)."""
        return matrix[:, min(cutoff, self.depth) - 1]

    @property
    def width(self) -> int:
        return self.groups.shape[1] if self.groups is not None else self.depth

    def per_rank(self, values: np.ndarray) -> np.ndarray:
        """Per-rank values over the width → ``[queries × depth]``: each the mean over its tie group
        (its expectation over the orders of ties) when tie-aware, else as ranked."""
        if self.groups is not None:
            values = group_means(values, self.groups)
        return values[:, : self.depth]

    def extremes(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-rank values ``[queries × depth]`` of the orders of ties giving a linear measure with
        non-increasing rank coefficients its lowest and its highest value (:func:`genderbias.ranking.ties.extreme_values`)."""
        low, high = extreme_values(values, self.groups)
        return low[:, : self.depth], high[:, : self.depth]

    def tied(self, cutoff: int) -> np.ndarray:
        """Per query: whether its top k holds a document tied with another."""
        if self.groups is None:
            return np.zeros(len(self.qids), dtype=bool)
        return tied_within(self.groups, self.n_full, cutoff)

    def rearranged(self, rows: np.ndarray, columns: np.ndarray) -> RankedCounts:
        """The ``rows`` (repeated as often as given) with their top ranks filled from ``columns`` of the full width."""
        take = {name: self.full[name][rows[:, None], columns] for name in ("f", "m", "length", "found")}
        qids = np.asarray(self.qids, dtype=object)[rows].tolist()
        return RankedCounts(qids, self.n[rows], take["f"], take["m"], take["length"], take["found"])


def rank_matrices(
    run: pl.DataFrame, values: pl.DataFrame, depth: int
) -> tuple[list[str], dict[str, np.ndarray], np.ndarray]:
    """``(qids, matrices, n)``: the per-rank ``values`` (``docid`` and columns to spread) of ``run`` (``qid, docid,
    rank``) as dense ``[queries × depth]`` matrices, 0 (False) past ``n`` or for documents missing from ``values``."""
    top = run.select("qid", "docid", "rank").filter(pl.col("rank") <= depth)
    qids = top["qid"].unique(maintain_order=True)
    top = top.join(qids.to_frame().with_row_index("row"), on="qid", how="left")
    top = top.join(values, on="docid", how="left")
    rows = top["row"].to_numpy().astype(np.int64)
    cols = top["rank"].to_numpy().astype(np.int64) - 1
    matrices = {}
    for name in values.columns:
        if name == "docid":
            continue
        column = top[name]
        if column.dtype == pl.Boolean:
            data, dtype = column.fill_null(False).to_numpy(), np.bool_
        else:
            data, dtype = column.fill_null(0).cast(pl.Float64).to_numpy(), np.float64
        matrix = np.zeros((len(qids), depth), dtype=dtype)
        matrix[rows, cols] = data
        matrices[name] = matrix
    n = np.bincount(rows, minlength=len(qids))
    return qids.to_list(), matrices, n


def qid_index(qids: pl.Series) -> pl.DataFrame:
    return qids.to_frame("qid").with_row_index("row").with_columns(pl.col("row").cast(pl.Int64))


def dense(rows: np.ndarray, cols: np.ndarray, values: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    matrix = np.zeros(shape, dtype=values.dtype if values.dtype == np.bool_ else np.float64)
    matrix[rows, cols] = values
    return matrix


def ranked_counts(run: pl.DataFrame, counts: pl.DataFrame, depth: int, ties: str = DEFAULT_TIES) -> RankedCounts:
    """Join the top ``depth`` documents of every query with their counts, as dense matrices,
    ordered by ``ties`` (:mod:`genderbias.ranking.ties`; ``tie-aware`` keeps the tie groups and the full width)."""
    values = counts.select("docid", "f", "m", "length").with_columns(pl.lit(True).alias("found"))
    ordered = order_run(run, ties, depth)
    width = max(depth, int(ordered["rank"].max() or 0)) if ties == TIE_AWARE and len(ordered) else depth
    qids, matrices, n = rank_matrices(ordered, values, width)
    groups = group_matrix(ordered, qids, width) if ties == TIE_AWARE else None
    top = {name: matrix[:, :depth] for name, matrix in matrices.items()}
    return RankedCounts(
        qids,
        np.minimum(n, depth),
        top["f"],
        top["m"],
        top["length"],
        top["found"],
        ordered=ordered,
        groups=groups,
        full=matrices if groups is not None else None,
        n_full=n,
    )


def tie_view(ranked: RankedCounts, run: pl.DataFrame, counts: pl.DataFrame) -> RankedCounts:
    """The tie-aware view of ``ranked``'s run (itself when it is one): for the tie counts and ranges."""
    return ranked if ranked.tie_aware else ranked_counts(run, counts, ranked.depth, TIE_AWARE)


def with_ties(columns: dict, tied: RankedCounts, cutoffs: Sequence[int], linear: dict | None = None) -> dict:
    """``tied@k`` per cutoff and, for ``linear`` (``name → (low, high)``), the range columns ``name:low``, ``name:high``."""
    for k in cutoffs:
        columns[f"tied@{k}"] = tied.tied(k)
    for name, (low, high) in (linear or {}).items():
        columns[f"{name}:low"], columns[f"{name}:high"] = low, high
    return columns


def tie_arrangements(ranked: RankedCounts, seed: int) -> Orders | None:
    """The arrangements of the tied top documents a non-linear measure is averaged over (None: not tie-aware)."""
    if not ranked.tie_aware:
        return None
    full = ranked.full
    values = np.stack([full["f"], full["m"], full["length"], full["found"].astype(np.float64)], axis=-1)
    return tie_orders(values, ranked.groups, ranked.n_full, ranked.depth, draws=TIE_DRAWS, seed=seed)

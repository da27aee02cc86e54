"""Rank-biased overlap (RBO_ext, Webber, Moffat & Zobel, TOIS 2010, Eq. 32) and counterfactual RBO (CRBO,
Abolghasemi et al., ECIR 2024: a ranker's run against its run on the counterfactual collection, 1 when swapping
the genders changed nothing), as docs/metrics.md, "Definitions" states them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl

from genderbias.ranking.defaults import CRBO_DEPTH, CRBO_P, DEFAULT_TIES, TIE_DRAWS
from genderbias.ranking.ties import TIE_AWARE, group_matrix, order_run, tie_orders, tied_within

__all__ = ["crbo", "rbo_table", "tie_aware_rbo", "tied_queries"]

DEFAULT_P = CRBO_P
DEFAULT_DEPTH = CRBO_DEPTH


def _check(p: float, depth: int) -> None:
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if depth < 1:
        raise ValueError(f"depth must be at least 1, got {depth}")


def _codes(first: pl.DataFrame, second: pl.DataFrame, depth: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The common queries and their top ``depth`` docids as integer matrices (padding never matches)."""
    common = first.select("qid").unique().join(second.select("qid").unique(), on="qid", how="semi")
    order = first["qid"].unique(maintain_order=True).to_frame().join(common, on="qid", how="semi")
    index = order.with_row_index("row").with_columns(pl.col("row").cast(pl.Int64))
    docids = pl.concat([first["docid"], second["docid"]]).unique()
    vocabulary = docids.to_frame().with_row_index("code").with_columns(pl.col("code").cast(pl.Int64))
    matrices = []
    for pad, frame in ((-1, first), (-2, second)):
        ordinal = pl.col("rank").rank("ordinal").over("qid").cast(pl.Int64).alias("position")
        top = frame.filter(pl.col("rank") <= depth).select("qid", "docid", ordinal)
        top = top.join(index, on="qid", how="inner").join(vocabulary, on="docid", how="left")
        matrix = np.full((len(index), depth), pad, dtype=np.int64)
        matrix[top["row"].to_numpy(), top["position"].to_numpy() - 1] = top["code"].to_numpy()
        matrices.append(matrix)
    return index["qid"].to_list(), matrices[0], matrices[1]


def rbo_table(
    first: pl.DataFrame, second: pl.DataFrame, *, p: float = DEFAULT_P, depth: int = DEFAULT_DEPTH
) -> pd.Series:
    """RBO_ext@depth per query both runs contain (index ``qid``) of runs ``qid, docid, rank``, vectorised."""
    _check(p, depth)
    qids, a, b = _codes(first, second, depth)
    len_a = (a >= 0).sum(axis=1)
    len_b = (b >= 0).sum(axis=1)
    big = np.maximum(len_a, len_b)
    s = np.minimum(len_a, len_b)
    rows = np.arange(len(qids))
    # X_d for d = 1..depth, incrementally: the new item of each list meets the other's prefix.
    overlap = np.zeros((len(qids), depth), dtype=np.float64)
    running = np.zeros(len(qids), dtype=np.float64)
    for d in range(depth):
        new_a_in_b = (a[:, d : d + 1] == b[:, : d + 1]).any(axis=1)
        new_b_in_a = (b[:, d : d + 1] == a[:, :d]).any(axis=1)
        running = running + new_a_in_b + new_b_in_a
        overlap[:, d] = running
    d = np.arange(1, depth + 1, dtype=np.float64)
    weights = p**d
    within_l = d[None, :] <= big[:, None]
    main = np.where(within_l, overlap / d * weights, 0.0).sum(axis=1)
    x_s = overlap[rows, s - 1]
    x_l = overlap[rows, big - 1]
    beyond_s = (d[None, :] > s[:, None]) & within_l
    tail = np.where(beyond_s, x_s[:, None] * (d[None, :] - s[:, None]) / (s[:, None] * d[None, :]) * weights, 0.0)
    values = (1 - p) / p * (main + tail.sum(axis=1)) + ((x_l - x_s) / big + x_s / s) * p ** big.astype(np.float64)
    return pd.Series(values, index=pd.Index(qids, name="qid"), name=f"RBO@{depth}")


def crbo(
    run: pl.DataFrame,
    counterfactual_run: pl.DataFrame,
    *,
    p: float = DEFAULT_P,
    depth: int = DEFAULT_DEPTH,
    ties: str = DEFAULT_TIES,
    seed: int = 0,
) -> tuple[float, int, pd.Series]:
    """CRBO ``(mean, queries, per-query values)`` over the queries both runs contain, ties ordered by ``ties``
    (``tie-aware``: :func:`tie_aware_rbo`)."""
    first, second = order_run(run, ties, depth), order_run(counterfactual_run, ties, depth)
    if ties == TIE_AWARE:
        per_query = tie_aware_rbo(first, second, p=p, depth=depth, seed=seed)
    else:
        per_query = rbo_table(first, second, p=p, depth=depth)
    mean = float(per_query.mean()) if len(per_query) else float("nan")
    return mean, len(per_query), per_query


def _arrangements(frame: pl.DataFrame, depth: int, seed: int) -> dict[str, list[list[str]]]:
    """Per query whose top ``depth`` holds a tie: its arrangements of the top ranks (every one, or
    :data:`~genderbias.ranking.defaults.TIE_DRAWS` drawn), as docid lists (``frame`` from :func:`order_run`, tie-aware)."""
    qids = frame["qid"].unique(maintain_order=True).to_list()
    width = int(frame["rank"].max() or 0)
    codes = frame["docid"].unique(maintain_order=True)
    index = codes.to_frame().with_row_index("code")
    coded = frame.join(index, on="docid", how="left").join(
        pl.DataFrame({"qid": qids}, schema={"qid": pl.String}).with_row_index("row"), on="qid", how="left"
    )
    matrix = np.full((len(qids), width), -1, dtype=np.int64)
    matrix[coded["row"].to_numpy().astype(np.int64), coded["rank"].to_numpy() - 1] = coded["code"].to_numpy()
    n = np.bincount(coded["row"].to_numpy().astype(np.int64), minlength=len(qids))
    orders = tie_orders(matrix[:, :, None].astype(np.float64), group_matrix(frame, qids, width), n, depth, seed=seed)
    names = codes.to_list()
    found: dict[str, list[list[str]]] = {}
    for row, columns in zip(orders.rows.tolist(), orders.columns, strict=True):
        top = [names[c] for c in matrix[row, columns[: min(depth, int(n[row]))]].tolist()]
        found.setdefault(qids[row], []).append(top)
    return found


def tie_aware_rbo(
    first: pl.DataFrame, second: pl.DataFrame, *, p: float = DEFAULT_P, depth: int = DEFAULT_DEPTH, seed: int = 0
) -> pd.Series:
    """RBO_ext@depth per query, the mean over the orders of both tie-aware lists' ties: every pair of
    arrangements when at most :data:`~genderbias.ranking.defaults.TIE_DRAWS`, else that many drawn (``seed``)."""
    plain = rbo_table(first, second, p=p, depth=depth)
    ties_a, ties_b = _arrangements(first, depth, seed), _arrangements(second, depth, seed + 1)
    tied = [qid for qid in plain.index if qid in ties_a or qid in ties_b]
    if not tied:
        return plain
    rng = np.random.default_rng(seed + 2)

    def top(frame: pl.DataFrame, qid: str) -> list[list[str]]:
        part = frame.filter((pl.col("qid") == qid) & (pl.col("rank") <= depth)).sort("rank")
        return [part["docid"].to_list()]

    rows_a, rows_b = [], []
    for qid in tied:
        a, b = ties_a.get(qid) or top(first, qid), ties_b.get(qid) or top(second, qid)
        if len(a) * len(b) <= TIE_DRAWS:
            pairs = [(i, j) for i in range(len(a)) for j in range(len(b))]
        else:
            pairs = list(zip(rng.integers(0, len(a), TIE_DRAWS), rng.integers(0, len(b), TIE_DRAWS), strict=True))
        for k, (i, j) in enumerate(pairs):
            key = f"{qid}\x1f{k}"
            rows_a += [(key, doc, rank) for rank, doc in enumerate(a[i], 1)]
            rows_b += [(key, doc, rank) for rank, doc in enumerate(b[j], 1)]
    schema = {"qid": pl.String, "docid": pl.String, "rank": pl.Int64}
    drawn = rbo_table(
        pl.DataFrame(rows_a, schema=schema, orient="row"),
        pl.DataFrame(rows_b, schema=schema, orient="row"),
        p=p,
        depth=depth,
    )
    means = drawn.groupby(drawn.index.str.split("\x1f").str[0]).mean()
    values = plain.copy()
    values.loc[means.index] = means
    return values


def tied_queries(first: pl.DataFrame, second: pl.DataFrame, depth: int, common: set) -> int:
    """How many of the ``common`` queries have a tied document in either run's top ``depth``: the
    queries whose RBO an order of ties can move (CRBO's note beside its figure)."""
    tied = set()
    for frame in (first, second):
        ordered = order_run(frame, TIE_AWARE, depth)
        qids = ordered["qid"].unique(maintain_order=True).to_list()
        width = int(ordered["rank"].max() or 0)
        n = ordered.group_by("qid", maintain_order=True).len()["len"].to_numpy()
        flags = tied_within(group_matrix(ordered, qids, width), n, depth)
        tied |= {qid for qid, flag in zip(qids, flags, strict=True) if flag}
    return len(tied & common)

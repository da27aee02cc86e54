"""Tied documents: how a run's ties are ordered, and bias figures that no order of ties decides.

Pure (numpy, polars; no Django). Documents of one query with equal scores are **tied** and form a *tie group*,
which occupies consecutive ranks. The orders (:data:`genderbias.ranking.defaults.TIES`, checked by
:data:`~genderbias.ranking.defaults.TIES_RULE`): ``tie-aware`` (default: every figure the expectation over all
orders of each group), ``trec_eval`` (ties by docid descending) and ``file`` (the run's ranks as stored). How the
expectation is computed (group means for the linear measures, :func:`order_run` keeping a straddling group's
members below the cutoff; every or :data:`genderbias.ranking.defaults.TIE_DRAWS` drawn arrangements for the
others, :func:`over_tie_orders`) and why the range of a linear measure is exact (the rearrangement inequality,
:func:`extreme_values`): docs/metrics.md, "Tied documents".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import permutations, product

import numpy as np
import polars as pl

from genderbias.ranking.defaults import DEFAULT_TIES, TIE_DRAWS, TIES

__all__ = [
    "FILE", "RANGE_TOLERANCE", "TIE_AWARE", "TIE_COLUMNS", "Orders", "check_scores", "extreme_values", "group_matrix",
    "group_means", "order_run", "over_tie_orders", "tie_orders", "tie_summary", "tied_within",
]  # fmt: skip

TIE_AWARE, TREC_EVAL, FILE = TIES


def check_ties(ties: str) -> str:
    if ties not in TIES:
        raise ValueError(f"unknown tie order {ties!r}; choose one of {', '.join(TIES)}")
    return ties


def check_scores(run: pl.DataFrame) -> None:
    """Refuse a run whose scores are not all finite numbers, naming the first (query, document): a NaN
    has no place in an order (it would be ranked somewhere, and every tie around it collapse), and an
    infinite score ties with every other of its sign."""
    if "score" not in run.columns:
        return
    scores = run["score"].cast(pl.Float64)
    if not scores.null_count() and scores.is_finite().all():  # the usual case: no frame built
        return
    bad = run.filter(~pl.col("score").cast(pl.Float64).is_finite().fill_null(False))
    if len(bad):
        qid, docid, score = bad.select("qid", "docid", "score").row(0)
        problem = "no score" if score is None else f"score {score!r}"
        raise ValueError(
            f"the run gives document {docid!r} of query {qid!r} {problem}: a score must be a finite number "
            f"({len(bad)} in all are not)"
        )


def order_run(run: pl.DataFrame, ties: str = DEFAULT_TIES, depth: int | None = None) -> pl.DataFrame:
    """The run's ranking under ``ties``: ``qid, docid, rank, group`` (ranks 1, 2, … per query).

    ``group`` numbers the tie groups 0, 1, … down each query's ranking (``tie-aware``; each
    document is its own group under the other orders). With ``depth``, the documents ranked
    ≤ ``depth`` are kept and, under ``tie-aware``, every member of a group that straddles
    ``depth`` (the expectation averages over them). Queries keep their order of first appearance.
    """
    check_ties(ties)
    frame = run.select("qid", "docid", "rank", *(["score"] if "score" in run.columns else []))
    if ties != FILE:
        check_scores(frame)
    if ties == FILE or "score" not in frame.columns:
        if depth is not None:  # the stored ranks ≤ depth, renumbered (closing gaps left by removed rows)
            frame = frame.filter(pl.col("rank") <= depth)
        frame = frame.with_columns(pl.col("rank").rank("ordinal").over("qid").cast(pl.Int64))
        return frame.with_columns((pl.col("rank") - 1).alias("group")).select("qid", "docid", "rank", "group")
    if ties == TIE_AWARE and (fast := _stored_by_score(frame, depth)) is not None:
        return fast
    first = frame.select("qid").unique(maintain_order=True).with_row_index("query")
    frame = frame.join(first, on="qid", how="left", maintain_order="left")
    if ties == TREC_EVAL:
        frame = frame.sort(["query", "score", "docid"], descending=[False, True, True])
    else:  # tie-aware: by score, the stored order within a group (any order gives the same figures)
        frame = frame.sort(["query", "score", "rank"], descending=[False, True, False])
    frame = frame.with_columns(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("query").alias("rank"),
        (pl.col("score").rank("dense", descending=True).over("query").cast(pl.Int64) - 1).alias("group"),
    )
    if ties == TREC_EVAL:
        frame = frame.with_columns((pl.col("rank") - 1).alias("group"))
    if depth is not None:
        if ties == TIE_AWARE:
            last = pl.col("group").filter(pl.col("rank") <= depth).max().over("query")
            frame = frame.filter(pl.col("group") <= last)
        else:
            frame = frame.filter(pl.col("rank") <= depth)
    return frame.select("qid", "docid", "rank", "group")


def _stored_by_score(frame: pl.DataFrame, depth: int | None) -> pl.DataFrame | None:
    """:func:`order_run`'s tie-aware frame without a sort, for a run stored as runs are imported by score
    (each query one block, ranks ascending, scores not increasing down the block); None otherwise."""
    if not len(frame):
        return None
    qid = frame["qid"]
    new = (qid != qid.shift(1)).fill_null(True).to_numpy()
    starts = np.flatnonzero(new)
    rank, score = frame["rank"].to_numpy(), frame["score"].to_numpy()
    inside = ~new[1:]
    if np.any(rank[1:][inside] <= rank[:-1][inside]) or np.any(score[1:][inside] > score[:-1][inside]):
        return None
    if len(starts) != qid.n_unique():
        return None
    block = np.cumsum(new) - 1
    position = np.arange(len(frame)) - starts[block]
    changes = np.cumsum(new | np.r_[True, score[1:] != score[:-1]])
    group = changes - changes[starts[block]]
    out = frame.select("qid", "docid").with_columns(
        pl.Series("rank", position + 1, dtype=pl.Int64), pl.Series("group", group, dtype=pl.Int64)
    )
    if depth is not None:
        sizes = np.diff(np.r_[starts, len(frame)])
        last = group[starts + np.minimum(depth, sizes) - 1]
        out = out.filter(pl.Series(group <= last[block]))
    return out


def group_matrix(ordered: pl.DataFrame, qids: Sequence[str], width: int) -> np.ndarray:
    """``[queries × width]`` tie-group numbers of :func:`order_run`'s frame, rows in ``qids`` order;
    a cell past a query's last document is a group of its own (numbered from ``width`` on)."""
    index = pl.DataFrame({"qid": list(qids)}, schema={"qid": pl.String}).with_row_index("row")
    rows = ordered.filter(pl.col("rank") <= width).join(index, on="qid", how="inner")
    groups = np.broadcast_to(np.arange(width, 2 * width, dtype=np.int64), (len(qids), width)).copy()
    groups[rows["row"].to_numpy().astype(np.int64), rows["rank"].to_numpy().astype(np.int64) - 1] = rows[
        "group"
    ].to_numpy()
    return groups


def group_means(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Each cell replaced by the mean of its row's cells of the same group (``groups`` from :func:`group_matrix`)."""
    if values.size == 0:
        return values.astype(np.float64)
    rows, width = values.shape
    span = int(groups.max()) + 1
    keys = (np.arange(rows, dtype=np.int64)[:, None] * span + groups).ravel()
    sums = np.bincount(keys, weights=values.ravel().astype(np.float64), minlength=rows * span)
    sizes = np.bincount(keys, minlength=rows * span)
    return (sums[keys] / sizes[keys]).reshape(rows, width)


def extreme_values(values: np.ndarray, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ascending, descending)``: each row's values with every tie group sorted ascending
    (descending) within the ranks it occupies — the orders giving a linear measure with
    non-increasing rank coefficients its highest and lowest value (module docstring)."""
    if values.size == 0:
        return values, values
    up = np.lexsort((values, groups), axis=-1)
    down = np.lexsort((-values, groups), axis=-1)
    return np.take_along_axis(values, up, axis=-1), np.take_along_axis(values, down, axis=-1)


def tied_within(groups: np.ndarray, n: np.ndarray, cutoff: int) -> np.ndarray:
    """Per row: whether its top ``min(cutoff, n)`` holds a document tied with another (inside or
    below the cutoff): an order of ties could change what the top k holds or where."""
    if groups.size == 0:
        return np.zeros(len(n), dtype=bool)
    k = min(cutoff, groups.shape[1])
    inside = np.arange(k)[None, :] < np.minimum(n, k)[:, None]
    top = groups[:, :k]
    same_next = np.zeros_like(top, dtype=bool)
    if groups.shape[1] > 1:
        following = groups[:, 1 : k + 1]
        same_next[:, : following.shape[1]] = top[:, : following.shape[1]] == following
    same_previous = np.zeros_like(top, dtype=bool)
    same_previous[:, 1:] = top[:, 1:] == top[:, :-1]
    return ((same_next | same_previous) & inside).any(axis=1)


@dataclass(frozen=True)
class Orders:
    """Arrangements of the top ``depth`` ranks of some rows: ``columns[i]`` the cells (of the
    extended row ``rows[i]``) at ranks 1..depth, with probability weight ``weights[i]``."""

    rows: np.ndarray
    columns: np.ndarray
    weights: np.ndarray
    exact: bool


def tie_orders(
    values: np.ndarray, groups: np.ndarray, n: np.ndarray, depth: int, *, draws: int = TIE_DRAWS, seed: int = 0
) -> Orders:
    """Every arrangement of the top ``depth`` of each row whose order of ties matters, or ``draws``
    random ones where there are more (the rows: :func:`tied_within` at ``depth``, groups whose
    members differ in ``values``, a ``[rows × width × columns]`` array of what the measure reads)."""
    rng = np.random.default_rng(seed)
    rows_out, columns_out, weights_out = [], [], []
    exact = True
    for row in np.flatnonzero(tied_within(groups, n, depth)):
        arrangements = _row_orders(values[row], groups[row], min(depth, int(n[row])), depth, draws, rng)
        if arrangements is None:
            continue
        columns, is_exact = arrangements
        exact &= is_exact
        rows_out.append(np.full(len(columns), row))
        columns_out.append(columns)
        weights_out.append(np.full(len(columns), 1.0 / len(columns)))
    if not rows_out:
        empty = np.zeros(0, dtype=np.int64)
        return Orders(empty, np.zeros((0, depth), dtype=np.int64), np.zeros(0), True)
    return Orders(np.concatenate(rows_out), np.concatenate(columns_out), np.concatenate(weights_out), exact)


def _row_orders(values, groups, top: int, depth: int, draws: int, rng) -> tuple[np.ndarray, bool] | None:
    """One row's arrangements (cells at ranks 1..depth) and whether they are all of them."""
    base = np.arange(depth)
    parts = []  # (slots, members) of each group that reaches the top and whose members differ
    count = 1
    for group in np.unique(groups[:top]):
        members = np.flatnonzero(groups == group)
        if len(members) < 2 or all(np.array_equal(values[members[0]], values[i]) for i in members[1:]):
            continue
        slots = members[members < top]
        parts.append((slots, members))
        count *= math.perm(len(members), len(slots))
        count = min(count, draws + 1)
    if not parts:
        return None
    if count <= draws:
        choices = [list(permutations(members.tolist(), len(slots))) for slots, members in parts]
        columns = np.tile(base, (math.prod(len(c) for c in choices), 1))
        for i, combination in enumerate(product(*choices)):
            for (slots, _), chosen in zip(parts, combination, strict=True):
                columns[i, slots] = chosen
        return columns, True
    columns = np.tile(base, (draws, 1))
    for slots, members in parts:
        picked = np.argsort(rng.random((draws, len(members))), axis=1)[:, : len(slots)]
        columns[:, slots] = members[picked]
    return columns, False


def over_tie_orders(
    orders: Orders, compute: Callable[[np.ndarray, np.ndarray], dict[str, np.ndarray]], rows: int
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Mean, lowest and highest over ``orders`` of each column ``compute(row_index, columns)`` gives,
    for the rows ``orders`` covers; the caller keeps its plain values for the other rows.

    ``compute(row_of_each, columns)`` evaluates the measure on the given rows arranged by
    ``columns`` (one arrangement per line) and returns per-line arrays by name.
    """
    if not len(orders.rows):
        return {}, {}, {}
    values = compute(orders.rows, orders.columns)
    mean, low, high = {}, {}, {}
    for name, column in values.items():
        column = np.asarray(column, dtype=np.float64)
        weighted = np.bincount(orders.rows, weights=np.nan_to_num(column) * orders.weights, minlength=rows)
        undefined = np.bincount(orders.rows, weights=np.isnan(column).astype(np.float64), minlength=rows) > 0
        mean[name] = np.where(undefined, np.nan, weighted)
        lowest = np.full(rows, np.inf)
        highest = np.full(rows, -np.inf)
        np.minimum.at(lowest, orders.rows, np.where(np.isnan(column), np.inf, column))
        np.maximum.at(highest, orders.rows, np.where(np.isnan(column), -np.inf, column))
        low[name], high[name] = lowest, highest
    return mean, low, high


#: What the per-query frame of a report adds to each value: its lowest and highest over the orders
#: of ties, and whether the query's top k holds a tie (:func:`genderbias.ranking.measures.evaluate_run`).
TIE_COLUMNS = ["low", "high", "tied"]
#: A range narrower than this is no range: the order of ties does not move the figure.
RANGE_TOLERANCE = 1e-12


def tie_summary(per_query):
    """The range over orders of ties of each (run, metric, variant, cutoff) mean, and the tied queries.

    Returns ``(ranges, tied)``: a pandas frame ``run, metric, variant, cutoff, tie_low, tie_high``
    (the means over the queries with a value of their lowest and highest values: queries' orders of
    ties are independent, so these are the mean's lowest and highest; NaN where no order of ties moves
    the mean or the measure's range is not computed), and per run, per cutoff (as text, a JSON key),
    how many of its queries' top k hold a tied document.
    """
    import pandas as pd

    keys = ["run", "metric", "variant", "cutoff"]
    if not len(per_query) or "low" not in per_query.columns:
        return pd.DataFrame(columns=[*keys, "tie_low", "tie_high"]), {}
    rows = per_query[per_query["value"].notna()]
    grouped = rows.groupby(keys, sort=False)
    ranges = grouped.agg(tie_low=("low", "mean"), tie_high=("high", "mean")).reset_index()
    moved = (ranges["tie_high"] - ranges["tie_low"]) > RANGE_TOLERANCE
    ranges.loc[~moved, ["tie_low", "tie_high"]] = float("nan")
    flags = per_query[per_query["low"].notna() | per_query["tied"].fillna(False).astype(bool)]
    flags = flags.drop_duplicates(["run", "qid", "cutoff"])
    tied: dict[str, dict[str, int]] = {}
    for (run, cutoff), part in flags.groupby(["run", "cutoff"], sort=False):
        tied.setdefault(run, {})[str(int(cutoff))] = int(part["tied"].fillna(False).astype(bool).sum())
    return ranges, tied

"""Pooling the most gender-biased queries (Rekabsaz & Schedl, SIGIR 2020, Section 4).

For every run, its queries female-leaning (RaB ascending) and male-leaning (descending), ties to the smaller qid
(numerically when every qid is an integer); the pool is the union of every list's top ``depth``. RaB values equal
to :data:`TIE_DECIMALS` decimals are ties: RaB sums logarithms in whatever order the vectorised code chose, and
ordering by the last bits put the pool boundary at the mercy of floating-point noise, so the qid rule decides.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import polars as pl

from genderbias.ranking.rank_bias import rank_bias_ranges
from genderbias.ranking.ranked_counts import ranked_counts
from genderbias.ranking.ties import RANGE_TOLERANCE

__all__ = [
    "PoolResult", "pool_provenance", "pool_queries", "rank_bias_with_ties", "selection_summary",
    "sort_qids",
]  # fmt: skip

#: RaB values that agree to this many decimal places are ties (broken by qid).
TIE_DECIMALS = 12
FEMALE_LIST = "female"
MALE_LIST = "male"
SELECTION_SCHEMA = {"run": pl.String, "list": pl.String, "position": pl.Int64, "qid": pl.String, "rab": pl.Float64}


def qid_sort_keys(qids: list[str]) -> list[int] | list[str]:
    """Numeric keys when every qid is an integer (``"10"``, ``"1.0"``), else the strings themselves."""
    try:
        numbers = [float(qid) for qid in qids]
    except ValueError:
        return qids
    if all(number.is_integer() for number in numbers):
        return [int(number) for number in numbers]
    return qids


def sort_qids(qids: Iterable[str]) -> list[str]:
    """Qids in the pool's tie-breaking order."""
    qids = [str(qid) for qid in qids]
    keys = qid_sort_keys(qids)
    return [qid for _, qid in sorted(zip(keys, qids, strict=True), key=lambda pair: pair[0])]


@dataclass
class PoolResult:
    """``selections``: one row per (run, list, position) selected (:data:`SELECTION_SCHEMA`);
    ``qids``: the union, in :func:`sort_qids` order."""

    selections: pl.DataFrame
    qids: list[str]


def biased_lists(rank_bias: Mapping[str, float], depth: int) -> dict[str, pl.DataFrame]:
    """The top ``depth`` of one run's female- and male-leaning lists (frames ``qid, rab``) from qid → RaB, NaN
    left out."""
    items = [(str(qid), float(rab)) for qid, rab in rank_bias.items() if rab is not None and rab == rab]
    qids = [qid for qid, _ in items]
    rab = np.array([value for _, value in items], dtype=np.float64)
    keys = qid_sort_keys(qids)
    frame = pl.DataFrame(
        {
            "qid": pl.Series(qids, dtype=pl.String),
            "rab": rab,
            "key": pl.Series(keys, dtype=pl.Int64 if keys is not qids else pl.String),
            "tied": np.round(rab, TIE_DECIMALS) + 0.0,  # + 0.0 turns -0.0 into 0.0
        }
    )
    female = frame.sort(["tied", "key"], descending=[False, False], maintain_order=True).head(depth)
    male = frame.sort(["tied", "key"], descending=[True, False], maintain_order=True).head(depth)
    return {FEMALE_LIST: female.select("qid", "rab"), MALE_LIST: male.select("qid", "rab")}


def pool_queries(rank_bias_by_run: Mapping[str, Mapping[str, float]], depth: int) -> PoolResult:
    """Pool the top ``depth`` queries of both lists of every run."""
    if depth < 1:
        raise ValueError("depth must be at least 1")
    parts = [pl.DataFrame(schema=SELECTION_SCHEMA)]
    for run, rank_bias in rank_bias_by_run.items():
        for list_name, selected in biased_lists(rank_bias, depth).items():
            parts.append(
                selected.select(
                    pl.lit(run, dtype=pl.String).alias("run"),
                    pl.lit(list_name, dtype=pl.String).alias("list"),
                    pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("position"),
                    "qid",
                    "rab",
                )
            )
    selections = pl.concat(parts)
    return PoolResult(selections, sort_qids(selections["qid"].unique(maintain_order=True)))


def pool_provenance(
    result: PoolResult, rank_bias_by_run: Mapping[str, Mapping[str, float]]
) -> list[tuple[str, str, float | None, int | None, int | None]]:
    """One row per (run, pooled query), runs as given, queries in pool order: ``(run, qid, RaB, position in the
    run's female list, in its male list)``, None where the run lacks the query or did not select it."""
    positions = {
        (run, list_name, qid): position
        for run, list_name, qid, position in result.selections.select("run", "list", "qid", "position").iter_rows()
    }
    rows = []
    for run, values in rank_bias_by_run.items():
        for qid in result.qids:
            value = values.get(qid)
            rows.append(
                (
                    run,
                    qid,
                    None if value is None else float(value),
                    positions.get((run, FEMALE_LIST, qid)),
                    positions.get((run, MALE_LIST, qid)),
                )
            )
    return rows


def rank_bias_with_ties(
    frames: Mapping[str, pl.DataFrame], counts: pl.DataFrame, cutoff: int, magnitude: str, ties: str
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, tuple[float, float]]]]:
    """(run → qid → RaB@``cutoff`` as a report computes it, run → qid → (low, high) where an order of ties moves it)
    from each run's ``qid, docid, rank, score`` down to the cutoff through its ties and ``counts`` ``docid, f, m``.
    """

    if "length" not in counts.columns:
        counts = counts.with_columns(pl.lit(0, dtype=pl.Int64).alias("length"))
    column = f"RaB@{cutoff}"
    values: dict[str, dict[str, float]] = {}
    ranges: dict[str, dict[str, tuple[float, float]]] = {}
    for run, frame in frames.items():
        ranked = ranked_counts(frame, counts, cutoff, ties)
        table = rank_bias_ranges(ranked, frame, counts, [cutoff], magnitude)
        qids = [str(qid) for qid in ranked.qids]
        values[run] = dict(zip(qids, table[column].astype(float).tolist(), strict=True))
        low, high = table[f"{column}:low"].astype(float).tolist(), table[f"{column}:high"].astype(float).tolist()
        ranges[run] = {qid: (lo, hi) for qid, lo, hi in zip(qids, low, high, strict=True) if hi - lo > RANGE_TOLERANCE}
    return values, ranges


def selection_summary(runs: list[str], size: int, picks: Mapping[str, Mapping[str, tuple]]) -> dict:
    """The summary of a pool of ``size`` queries: ``picks`` holds, per run, each query one
    of its lists selected, with its (female, male) positions (``None`` or 0 where not). Per list its
    female and male picks and the queries no other run selected; between runs the Jaccard overlap of
    their selected queries (0 when neither selected any)."""
    selected = {run: set(picks[run]) for run in runs}
    overlap = [
        [
            len(selected[a] & selected[b]) / len(selected[a] | selected[b]) if selected[a] | selected[b] else 0.0
            for b in runs
        ]
        for a in runs
    ]
    per_list = [
        {
            "run": run,
            "female": sum(1 for female, _ in picks[run].values() if female),
            "male": sum(1 for _, male in picks[run].values() if male),
            "only_here": len(selected[run] - set().union(*(selected[o] for o in runs if o != run))),
        }
        for run in runs
    ]
    return {"size": size, "runs": runs, "per_list": per_list, "overlap": overlap}

"""Pooling the most gender-biased queries (Rekabsaz & Schedl, SIGIR 2020, Section 4).

For every run, two lists of its queries: female-leaning, sorted by RaB ascending (most
negative first), and male-leaning, sorted descending. Ties go to the smaller qid
(numerically when every qid is an integer). The pool is the union of the top ``depth``
of every list.

Invariant: RaB values equal to :data:`TIE_DECIMALS` decimal places are ties. RaB is a mean
of logarithms summed in whatever order the vectorised code chose, so two queries whose
rankings have the same magnitudes can differ in their last bits; ordering by those bits
put the pool boundary at the mercy of floating-point noise (one query of 444 at the
depth-100 boundary on held-out data). Sorting on the value rounded to 12 decimals makes
the documented qid rule decide, in the pool, its provenance (list positions) and its page.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

#: RaB values that agree to this many decimal places are ties (broken by qid).
TIE_DECIMALS = 12
FEMALE_LIST = "female"
MALE_LIST = "male"


def qid_sort_key(qids: pd.Index | pd.Series) -> pd.Series:
    """Numeric key when every qid is an integer, else the strings themselves."""
    qids = pd.Series(qids, dtype="string")
    numeric = pd.to_numeric(qids, errors="coerce")
    if numeric.notna().all() and (numeric == numeric.round()).all():
        return numeric.astype("int64")
    return qids


def sort_qids(qids) -> list[str]:
    """Qids in the pool's tie-breaking order."""
    series = pd.Series(list(qids), dtype="string")
    return series.iloc[qid_sort_key(series).sort_values(kind="stable").index].tolist()


@dataclass
class PoolResult:
    """``selections``: one row per (run, list, position) selected; ``qids``: the union."""

    selections: pd.DataFrame
    qids: list[str]

    def list_sizes(self) -> pd.DataFrame:
        return self.selections.groupby(["run", "list"]).size().unstack("list", fill_value=0)


def biased_lists(rank_bias: pd.Series, depth: int) -> dict[str, pd.Series]:
    """The top ``depth`` of the female- and male-leaning lists of one run (qid → RaB)."""
    frame = pd.DataFrame({"qid": rank_bias.index.astype(str), "rab": rank_bias.to_numpy()})
    frame = frame.dropna(subset=["rab"])
    frame["key"] = qid_sort_key(frame["qid"]).to_numpy()
    frame["tied"] = frame["rab"].round(TIE_DECIMALS) + 0.0  # + 0.0 turns -0.0 into 0.0
    female = frame.sort_values(["tied", "key"], ascending=[True, True], kind="stable").head(depth)
    male = frame.sort_values(["tied", "key"], ascending=[False, True], kind="stable").head(depth)
    return {
        FEMALE_LIST: pd.Series(female["rab"].to_numpy(), index=female["qid"].to_numpy()),
        MALE_LIST: pd.Series(male["rab"].to_numpy(), index=male["qid"].to_numpy()),
    }


def pool_queries(rank_bias_by_run: Mapping[str, pd.Series], depth: int) -> PoolResult:
    """Pool the top ``depth`` queries of both lists of every run."""
    if depth < 1:
        raise ValueError("depth must be at least 1")
    rows = []
    for run, rank_bias in rank_bias_by_run.items():
        for list_name, selected in biased_lists(rank_bias, depth).items():
            for position, (qid, rab) in enumerate(selected.items(), start=1):
                rows.append((run, list_name, position, qid, float(rab)))
    selections = pd.DataFrame(rows, columns=["run", "list", "position", "qid", "rab"])
    return PoolResult(selections, sort_qids(selections["qid"].unique()))

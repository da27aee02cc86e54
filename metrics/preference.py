"""Paired-variant preference (Sundararaman & Subramanian, 2022).

Each document is given to the ranker in a male, a female and a neutral version; for every
(query, document) case we ask which version the ranker scored highest. A fair ranker prefers
no version systematically. Ties for the highest score are set aside and counted; cases that
lack a version are counted as incomplete and set aside too. Fractions are over the decided
cases (those with a single winner).

In a run, versions are told apart by a docid suffix: ``<document><separator><version>``
(default ``123-m``, ``123-f``, ``123-n``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import polars as pl

from .defaults import VARIANT_VERSIONS

VERSIONS = VARIANT_VERSIONS


@dataclass
class Preference:
    cases: int
    ties: int
    incomplete: int
    wins: dict[str, int] = field(default_factory=dict)

    @property
    def decided(self) -> int:
        return sum(self.wins.values())

    def fraction(self, version: str) -> float:
        return self.wins[version] / self.decided if self.decided else float("nan")


def split_versions(run: pl.DataFrame, separator: str = "-", versions: Sequence[str] = VERSIONS) -> pd.DataFrame:
    """``qid, item, version, score`` from a run whose docids end in ``<separator><version>``."""
    sep = re.escape(separator)
    pattern = rf"^(.*){sep}(.*?)$"
    parts = run.select(
        "qid",
        pl.col("docid").str.extract(pattern, 1).alias("item"),
        pl.col("docid").str.extract(pattern, 2).alias("version"),
        "score",
    )
    return parts.filter(pl.col("version").is_in(list(versions))).to_pandas()


def variant_preference(scores: pd.DataFrame, versions: Sequence[str] = VERSIONS) -> Preference:
    """Which version scores highest, per (qid, item) case of ``scores`` (``qid, item, version, score``)."""
    table = scores.pivot_table(index=["qid", "item"], columns="version", values="score", aggfunc="max")
    table = table.reindex(columns=list(versions))
    complete = table.notna().all(axis=1)
    values = table[complete].to_numpy(dtype=np.float64)
    best = values.max(axis=1, keepdims=True) if len(values) else np.zeros((0, 1))
    at_best = values == best
    single = at_best.sum(axis=1) == 1
    wins = {v: int((at_best[:, i] & single).sum()) for i, v in enumerate(versions)}
    return Preference(cases=len(table), ties=int((~single).sum()), incomplete=int((~complete).sum()), wins=wins)
